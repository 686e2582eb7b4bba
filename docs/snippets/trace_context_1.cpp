// Reading an incoming traceparent and writing the outgoing one, without allocating.
#include <jsonlw/trace_context.hpp>

#include <fmt/format.h>

#include <string_view>

int main()
{
    jsonlw::TraceparentError why{};
    const auto incoming = jsonlw::TraceContext::parse_traceparent(
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &why);
    if (!incoming) return 1;
    fmt::print("trace {} parent {} sampled {}\n", incoming->trace_id_hex(),
               incoming->span_id_hex(), incoming->sampled());

    jsonlw::TraceContext outgoing = *incoming;  // same trace, this operation's span
    outgoing.span_id = {0x53, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
    char header[jsonlw::TraceContext::traceparent_size];
    outgoing.format_traceparent(header);
    fmt::print("traceparent: {}\n", std::string_view(header, sizeof header));

    // Uppercase hex is not allowed: the caller restarts the trace.
    if (jsonlw::TraceContext::parse_traceparent(
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", &why))
        return 1;
    fmt::print("refused: {}\n", jsonlw::to_string(why));
}
