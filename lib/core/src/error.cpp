#include <jsonlw/error.hpp>

#include <string>

namespace jsonlw {
namespace {

class Category final : public std::error_category {
public:
    const char* name() const noexcept override { return "jsonlw"; }
    std::string message(int ev) const override
    {
        switch (static_cast<errc>(ev)) {
        case errc::timed_out: return "timed out";
        case errc::disabled: return "writer is inert or disabled";
        }
        return "unknown jsonlw error";
    }
};

}  // namespace

const std::error_category& error_category() noexcept
{
    static const Category category;
    return category;
}

}  // namespace jsonlw
