#include <jsonlw/report/detail/progress.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>

namespace jsonlw::tools {

namespace {

bool is_terminal(std::FILE* f) noexcept
{
    const int fd = f ? ::fileno(f) : -1;
    return fd >= 0 && ::isatty(fd) == 1;
}

std::string amount(std::uint64_t n, bool bytes)
{
    return bytes ? format_bytes(static_cast<double>(n)) : fmt::format("{}", n);
}

}  // namespace

std::string format_bytes(double bytes)
{
    static constexpr const char* units[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000.0 && u < 4) {
        bytes /= 1000.0;
        ++u;
    }
    return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u]) : fmt::format("{:.2f} {}", bytes, units[u]);
}

Progress::Progress(std::string label, std::uint64_t total, ProgressOptions options)
    : label_(std::move(label)),
      total_(total),
      options_(options),
      bar_(options.enabled && options.bar.value_or(is_terminal(options.out))),
      started_(Clock::now()),
      next_draw_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        bar_ ? options.bar_interval : options.line_interval)
                        .count())
{
}

Progress::~Progress() { finish(); }

void Progress::advance(std::uint64_t amount) noexcept
{
    done_.fetch_add(amount, std::memory_order_relaxed);
    if (!options_.enabled) return;
    const auto now_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started_).count();
    auto next = next_draw_ns_.load(std::memory_order_relaxed);
    if (now_ns < next) return;
    const auto interval = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              bar_ ? options_.bar_interval : options_.line_interval)
                              .count();
    // One thread wins the right to draw this interval; the others go on working.
    if (!next_draw_ns_.compare_exchange_strong(next, now_ns + interval, std::memory_order_relaxed))
        return;
    draw(false);
}

void Progress::finish() noexcept
{
    if (!options_.enabled) return;
    draw(true);
}

void Progress::draw(bool final) noexcept
{
    try {
        std::lock_guard lock(draw_mu_);
        if (finished_) return;
        if (final) finished_ = true;
        // A short run without a bar says nothing: no line was due yet.
        if (final && !bar_ && !drawn_ && Clock::now() - started_ < options_.line_interval) return;
        drawn_ = true;
        const std::uint64_t done = done_.load(std::memory_order_relaxed);
        const double secs = std::chrono::duration<double>(Clock::now() - started_).count();
        const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
        const std::string rate_text =
            options_.bytes ? format_bytes(rate) + "/s" : fmt::format("{:.0f}/s", rate);
        std::string line;
        if (bar_) {
            constexpr int width = 30;
            if (total_ > 0) {
                const double frac = std::min(1.0, static_cast<double>(done) / static_cast<double>(total_));
                const int filled = static_cast<int>(frac * width);
                line = fmt::format("\r{} [{:=<{}}{: <{}}] {:5.1f}% {} of {}  {}  ", label_, "",
                                   filled, "", width - filled, frac * 100.0,
                                   amount(done, options_.bytes), amount(total_, options_.bytes),
                                   rate_text);
            } else {
                line = fmt::format("\r{} {}  {}  ", label_, amount(done, options_.bytes), rate_text);
            }
            if (final) line += '\n';
        } else {
            if (total_ > 0)
                line = fmt::format("{}: {:.1f}% ({} of {}), {}, {:.1f} s{}\n", label_,
                                   std::min(100.0, 100.0 * static_cast<double>(done) /
                                                       static_cast<double>(total_)),
                                   amount(done, options_.bytes), amount(total_, options_.bytes),
                                   rate_text, secs, final ? ", done" : "");
            else
                line = fmt::format("{}: {}, {}, {:.1f} s{}\n", label_, amount(done, options_.bytes),
                                   rate_text, secs, final ? ", done" : "");
        }
        std::fputs(line.c_str(), options_.out);
        std::fflush(options_.out);
    } catch (...) {
        // Progress is a courtesy: never let it fail the work it reports on.
    }
}

}  // namespace jsonlw::tools
