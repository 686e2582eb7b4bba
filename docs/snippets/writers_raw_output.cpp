// The raw-output hook: two chunks of one streamed output, the second final, with logprobs.
#include <jsonlw/raw_output_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <cstdint>

int main()
{
    boost::asio::io_context io;
    jsonlw::RawOutputWriter writer(io.get_executor(), {.directory = "jsonlw-out/raw"});
    writer.start();

    // What the post-processor hook sees at two steps of request 7 (the chunk only borrows).
    const std::int32_t ids1[] = {27, 14172}, ids2[] = {151658};
    const jsonlw::TokenLogprob lp1[] = {{.token_id = 27, .logprob = -0.01, .rank = 1},
                                        {.token_id = 14172, .logprob = -1.2, .rank = 2}};
    const jsonlw::TokenLogprob lp2[] = {{.token_id = 151658, .logprob = -0.3, .rank = 1}};
    writer.on_chunk({.request_id = 7, .text_diff = "<tool", .token_ids_diff = ids1,
                     .streaming = true, .logprobs_diff = lp1});
    writer.on_chunk({.request_id = 7, .text_diff = "_call>", .token_ids_diff = ids2,
                     .is_final = true, .logprobs_diff = lp2});  // final: the record is queued

    writer.async_close([&writer](jsonlw::error_code, jsonlw::CloseReport report) {
        fmt::print("raw_output: finished {}, written {}\n", writer.counters().finished,
                   report.stats.written);
    });
    io.run();
}
