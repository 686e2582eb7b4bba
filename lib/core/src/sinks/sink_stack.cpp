// The sink stack's factories (see sink_stack.hpp): the order of the decorators is decided
// here and nowhere else.
#include <jsonlw/sinks/sink_stack.hpp>

#include <jsonlw/sinks/chain_sink.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/otlp_sink.hpp>
#include <jsonlw/sinks/path_router_sink.hpp>

#include <stdexcept>

namespace jsonlw {

std::shared_ptr<LineSink> make_destination(const WriterOptions& opts)
{
    if (opts.sink) return opts.sink;
    return std::make_shared<FileSink>(FileSinkOptions{.rotation = opts.rotation});
}

std::shared_ptr<LineSink> with_path_files(std::shared_ptr<LineSink> destination)
{
    return std::make_shared<PathRouterSink>(std::move(destination));
}

std::shared_ptr<LineSink> with_chain(std::shared_ptr<LineSink> inner, const WriterOptions& opts)
{
    if (opts.chain == ChainMode::none && !opts.chain_key) return inner;
    if (opts.chain == ChainMode::none)
        throw std::invalid_argument("a chain key is only for chain = hmac-sha256");
    return std::make_shared<ChainSink>(std::move(inner), opts.chain, opts.chain_key);
}

std::shared_ptr<LineSink> with_format(std::shared_ptr<LineSink> inner, const WriterOptions& opts)
{
    if (opts.format != LineFormat::otlp) return inner;
    return std::make_shared<OtlpSink>(std::move(inner), opts.otlp);
}

std::shared_ptr<LineSink> make_sink_stack(const WriterOptions& opts, bool path_files)
{
    std::shared_ptr<LineSink> bottom = make_destination(opts);
    if (path_files) bottom = with_path_files(std::move(bottom));
    return with_format(with_chain(std::move(bottom), opts), opts);
}

}  // namespace jsonlw
