// The umbrella header: everything a program embedding jsonlw needs.
#pragma once

#include <jsonlw/append_result.hpp>
#include <jsonlw/close_all.hpp>
#include <jsonlw/durability.hpp>
#include <jsonlw/error.hpp>
#include <jsonlw/file_io.hpp>
#include <jsonlw/json_line.hpp>
#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/lines.hpp>
#include <jsonlw/log.hpp>
#include <jsonlw/malformed_record.hpp>
#include <jsonlw/overflow.hpp>
#include <jsonlw/path_component.hpp>
#include <jsonlw/raw_json_text.hpp>
#include <jsonlw/raw_json_writer.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/line_sink.hpp>
#include <jsonlw/sinks/memory_sink.hpp>
#include <jsonlw/sinks/partitioned_file_sink.hpp>
#include <jsonlw/sinks/tee_sink.hpp>
#include <jsonlw/submit_result.hpp>
#include <jsonlw/utc_time.hpp>
#include <jsonlw/version.hpp>
#include <jsonlw/writer_messages.hpp>
#include <jsonlw/writer_options.hpp>
#include <jsonlw/writer_stats.hpp>
