// Shared by the fuzz targets: an independent reference for JsonLine's UTF-8 sanitizing, and a
// harness that runs a writer single-threaded (its loop and its I/O executor are two
// io_contexts polled by the fuzzing thread, settle()) with appends captured in memory.
#pragma once

#include <jsonlw/file_io.hpp>
#include <jsonlw/writer_options.hpp>
#include <jsonlw/writer_stats.hpp>

#include <boost/asio/io_context.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace jsonlw_fuzz {

// Invalid UTF-8 → U+FFFD per maximal subpart of an ill-formed sequence (Unicode §3.9,
// "U+FFFD substitution of maximal subparts"), written from the standard's table 3-7, not
// from jsonlw's code.
inline std::string sanitize_utf8(std::string_view in)
{
    std::string out;
    const auto* s = reinterpret_cast<const unsigned char*>(in.data());
    const std::size_t n = in.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            out.push_back(static_cast<char>(c));
            ++i;
            continue;
        }
        // Expected length and the range of the second byte, per table 3-7.
        std::size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) { len = 3; lo = 0xA0; }
        else if (c >= 0xE1 && c <= 0xEC) len = 3;
        else if (c == 0xED) { len = 3; hi = 0x9F; }
        else if (c >= 0xEE && c <= 0xEF) len = 3;
        else if (c == 0xF0) { len = 4; lo = 0x90; }
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        else if (c == 0xF4) { len = 4; hi = 0x8F; }
        if (len == 0) {  // not a lead byte at all
            out += "\xEF\xBF\xBD";
            ++i;
            continue;
        }
        std::size_t k = 1;
        while (k < len && i + k < n) {
            const unsigned char b = s[i + k];
            const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
            if (b < l || b > h) break;
            ++k;
        }
        if (k == len) out.append(in.substr(i, len));
        else out += "\xEF\xBF\xBD";  // the maximal subpart s[i, i+k) is one U+FFFD
        i += k;
    }
    return out;
}

// Appends go nowhere on disk: open() gives /dev/null, writev() keeps the bytes.
class CaptureIo : public jsonlw::FileIo {
public:
    int open(const char*, int, mode_t) noexcept override
    {
        return ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    }
    ssize_t writev(int, const iovec* iov, int iovcnt) noexcept override
    {
        ssize_t total = 0;
        for (int i = 0; i < iovcnt; ++i) {
            data.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
            total += static_cast<ssize_t>(iov[i].iov_len);
        }
        return total;
    }
    std::string data;
};

// A scratch directory for a writer's start() (removed at exit; the appends never reach it).
inline const std::string& scratch_dir()
{
    static const std::string dir = [] {
        std::string t = "/tmp/jsonlw-fuzz-XXXXXX";
        if (::mkdtemp(t.data()) == nullptr) std::abort();
        static std::string copy;
        copy = t;
        std::atexit([] { ::rmdir(copy.c_str()); });
        return t;
    }();
    return dir;
}

// Polls both contexts until the writer has nothing pending.
template <class Writer>
void settle(boost::asio::io_context& loop, boost::asio::io_context& io, const Writer& w)
{
    for (long spins = 0; w.stats().pending != 0; ++spins) {
        if (spins > 10'000'000) std::abort();  // a hang is a bug too
        loop.restart();
        loop.poll();
        io.restart();
        io.poll();
    }
}

// A started Writer on `loop`, its I/O on `io`, its appends in `sink`, its logs dropped; what
// `extra` holds follows the WriterOptions in its constructor.
template <class Writer>
struct Harness {
    template <class... Extra>
    explicit Harness(Extra&&... extra)
        : writer(loop.get_executor(), options(), std::forward<Extra>(extra)...)
    {
        writer.start();
    }

    boost::asio::io_context loop, io;
    std::shared_ptr<CaptureIo> sink = std::make_shared<CaptureIo>();
    Writer writer;

private:
    jsonlw::WriterOptions options()
    {
        return {.directory = scratch_dir(),
                .log = [](jsonlw::LogLevel, std::string_view) {},
                .io_executor = io.get_executor(),
                .file_io = sink};
    }
};

}  // namespace jsonlw_fuzz
