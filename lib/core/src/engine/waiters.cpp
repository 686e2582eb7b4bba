// Waiters: the pending completions of flush, reopen and close (strand). See waiters.hpp.
#include "waiters.hpp"

namespace jsonlw::detail {

void Waiters::complete_flushes(std::uint64_t resolved_upto, error_code ec)
{
    if (flushes_.empty()) return;
    // Never erase() from the middle: that move-assigns any_completion_handler, whose move
    // assignment recurses without end in Boost 1.81. Move-construct the rest instead.
    decltype(flushes_) rest;
    for (auto& [target, h] : flushes_) {
        if (ec || target <= resolved_upto) complete(std::move(h), ec);
        else rest.emplace_back(target, std::move(h));
    }
    flushes_.swap(rest);
}

std::vector<Waiters::Handler> Waiters::take_reopens() noexcept
{
    auto taken = std::move(reopens_);
    reopens_.clear();
    return taken;
}

void Waiters::finish(const CloseReport& report)
{
    report_ = report;
    for (auto& h : closes_) complete(std::move(h), error_code{}, *report_);
    closes_.clear();
    for (auto& h : reopens_) complete(std::move(h), error_code{});
    reopens_.clear();
    complete_flushes(0, report.drained ? error_code{} : error_code(make_error_code(errc::timed_out)));
}

}  // namespace jsonlw::detail
