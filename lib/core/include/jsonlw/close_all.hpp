// async_close_all(token, writers...): closes several writers at once, one completion for all.
#pragma once

#include <jsonlw/error.hpp>
#include <jsonlw/writer_stats.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <tuple>
#include <utility>

namespace jsonlw {

// Calls async_close() on every writer (any JsonlRecordWriter: the three configured writers,
// RawJsonWriter, KafkaJsonWriter, your own) at once, so their shutdown timeouts run side by
// side, and completes when the last one has: no later than the longest shutdown_timeout
// (+ a small margin). Signature: void(jsonlw::error_code, std::array<CloseReport, N>), the
// reports in argument order; the error_code is always success (each report says whether
// its writer drained). Every token works (callback, use_awaitable, use_future, deferred).
// The completion runs on the handler's associated executor, else on the first writer's.
// Each writer must outlive the operation. Calling it on a writer already closing or closed
// is fine: that writer reports again.
template <class Token, class... Writers>
auto async_close_all(Token&& token, Writers&... writers)
{
    constexpr std::size_t n = sizeof...(Writers);
    using Reports = std::array<CloseReport, n>;
    return boost::asio::async_initiate<Token, void(error_code, Reports)>(
        [](auto handler, Writers*... ws) {
            using Handler = decltype(handler);
            if constexpr (n == 0) {
                const auto ex = boost::asio::get_associated_executor(handler);
                boost::asio::post(ex, boost::asio::append(std::move(handler), error_code{},
                                                          Reports{}));
            } else {
                auto* first = std::get<0>(std::tuple<Writers*...>(ws...));
                auto work = boost::asio::prefer(
                    boost::asio::get_associated_executor(handler, first->get_executor()),
                    boost::asio::execution::outstanding_work.tracked);
                using Work = decltype(work);
                struct State {
                    Handler handler;
                    Work work;
                    Reports reports{};
                    std::atomic<std::size_t> left{n};
                };
                std::shared_ptr<State> st(new State{std::move(handler), std::move(work)});
                std::size_t i = 0;
                (ws->async_close([st, idx = i++](error_code, CloseReport report) {
                     st->reports[idx] = std::move(report);
                     if (st->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
                     auto done = st->work;  // keep the executor busy until the handler ran
                     boost::asio::dispatch(done, [st]() mutable {
                         Handler h = std::move(st->handler);
                         Reports r = std::move(st->reports);
                         st.reset();
                         std::move(h)(error_code{}, std::move(r));
                     });
                 }),
                 ...);
            }
        },
        token, &writers...);
}

}  // namespace jsonlw
