// When a writer asks the kernel to put appended bytes on stable storage.
#pragma once

namespace jsonlw {

enum class Durability {
    // Bytes are written to the page cache; `written` counts a record once write() returned.
    // A process crash loses nothing, a machine crash may lose recent records.
    none,
    // Each batch is fsync'ed before its records count as `written`.
    fsync_batch,
    // Records count as `written` after write(); the file is fsync'ed at most every
    // fsync_interval while there is unsynced data, and once more at close.
    fsync_interval,
};

}  // namespace jsonlw
