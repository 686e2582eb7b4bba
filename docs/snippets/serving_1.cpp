// One token's data, two readers: the SSE event a client receives and the raw-output record
// are written from the same TokenLogprob, with the same spelling (write_logprob).
#include <jsonlw/json_line.hpp>
#include <jsonlw/raw_output_writer.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <string>

int main()
{
    boost::asio::io_context loop;  // the server's loop: sessions, writers' drains, hooks
    jsonlw::RawOutputWriter raw(loop.get_executor(), {.directory = "jsonlw-out/raw"});
    raw.start();

    // The snapshot stage's row for request 7's first token (token_logprob() makes it).
    const std::int32_t id = 42;
    const jsonlw::TokenLogprob lp{.token_id = id, .logprob = double(-0.1234567f), .rank = 1,
                                  .top = {{42, double(-0.1234567f)}, {7, double(-2.5f)}}};

    // The response's event, as jsonlw serve writes it (tools/serve/openai_response.cpp).
    jsonlw::LineBuffer buf;
    jsonlw::JsonLine event(buf);
    event.begin_object().field("token", " the").key("logprob");
    jsonlw::write_logprob(event, lp.logprob);
    event.end_object();
    fmt::print("data: {}\n\n", event.view());  // data: {"token":" the","logprob":-0.1234567}

    // The record: the same value, so the client's number and the file's agree digit for digit.
    raw.on_chunk({.request_id = 7, .text_diff = " the", .token_ids_diff = {&id, 1},
                  .is_final = true, .streaming = true, .logprobs_diff = {&lp, 1}});
    raw.async_close([](jsonlw::error_code, jsonlw::CloseReport r) {
        fmt::print("raw output: written {}\n", r.stats.written);
    });
    loop.run();
}
