// Compile-time checks of the layout promises in types.hpp: a TokenSnapshot lives in pinned
// memory and is copied as bytes between the device, the slot and the writers.
#include <jsonlw/snapshot/types.hpp>

#include <type_traits>

namespace jsonlw::snapshot {

static_assert(std::is_trivially_copyable_v<TokenSnapshot>);
static_assert(std::is_standard_layout_v<TokenSnapshot>);
static_assert(std::is_trivially_copyable_v<RowMeta>);
static_assert(std::is_trivially_copyable_v<LogitsView>);
static_assert(sizeof(TokenSnapshot) % alignof(std::uint64_t) == 0);

}  // namespace jsonlw::snapshot
