// The writer's sink stack, put together in one place and in one order (docs/sinks.md, "The
// stack"); the engine calls make_sink_stack() at start() and knows only the LineSink it returns:
//   1. the destination: WriterOptions::sink, or a FileSink with the options' rotation;
//   2. the path router (a PathRouterSink): the files a write_batch() override names with
//      append(path, lines) beside the destination, so that what follows covers them too;
//   3. the hash chain (a ChainSink) when WriterOptions::chain asks for one: it seals the bytes
//      that land, so it sits right on the destination and the named files;
//   4. the OTLP encoding (an OtlpSink) under LineFormat::otlp: it makes those bytes, so it
//      wraps the chain.
// The factories are free functions a user may call too — to build a destination of their own
// the way the writer would (a TeeSink whose branch is the writer's own file, say). Any thread;
// each returns a new, unstarted sink.
#pragma once

#include <jsonlw/sinks/line_sink.hpp>
#include <jsonlw/writer_options.hpp>

#include <memory>

namespace jsonlw {

// 1: `opts.sink`, or a FileSink with opts.rotation.
std::shared_ptr<LineSink> make_destination(const WriterOptions& opts);

// 2: `destination` and the files PathRouterSink::path_key() names, behind one PathRouterSink.
std::shared_ptr<LineSink> with_path_files(std::shared_ptr<LineSink> destination);

// 3: `inner` behind a ChainSink when opts.chain is set; `inner` itself when not. Throws
// std::invalid_argument for chain options that cannot be used (a key without hmac-sha256, a
// key of the wrong size).
std::shared_ptr<LineSink> with_chain(std::shared_ptr<LineSink> inner, const WriterOptions& opts);

// 4: `inner` behind an OtlpSink under LineFormat::otlp; `inner` itself for JSON Lines.
std::shared_ptr<LineSink> with_format(std::shared_ptr<LineSink> inner, const WriterOptions& opts);

// 1 to 4 in that order: the sink a writer with `opts` writes to. Throws as with_chain().
// `path_files` false leaves out 2, for a writer that cannot name files: one whose encoder
// keeps the default write_batch() (the engine passes it; append(path) needs an override).
std::shared_ptr<LineSink> make_sink_stack(const WriterOptions& opts, bool path_files = true);

}  // namespace jsonlw
