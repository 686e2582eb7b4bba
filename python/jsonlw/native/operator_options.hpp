// The operator features a Python writer takes by keyword (docs/python.md, "Operator
// features"): the output format, the hash chain with its key file and, for raw output and
// request traces, the capture level — parsed from the strings of the Python API into the C++
// options. Called on the constructing thread; a bad value raises ValueError, naming it.
#pragma once

#include <jsonlw/capture.hpp>
#include <jsonlw/chain_manifest.hpp>
#include <jsonlw/line_chain.hpp>
#include <jsonlw/writer_options.hpp>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::optional<std::string> arguments

#include <optional>
#include <stdexcept>
#include <string>

namespace jsonlw::python {

// format: "jsonl" | "otlp"; chain: "none" | "sha256" | "hmac-sha256"; chain_key: a key file
// (hmac-sha256 needs it, the others refuse it).
inline void apply_format_and_chain(WriterOptions& o, const std::string& format,
                                   const std::string& chain,
                                   const std::optional<std::string>& chain_key)
{
    if (format == "jsonl") o.format = LineFormat::jsonl;
    else if (format == "otlp") o.format = LineFormat::otlp;
    else throw pybind11::value_error("format must be 'jsonl' or 'otlp', got '" + format + "'");
    const auto mode = parse_chain_mode(chain);
    if (!mode)
        throw pybind11::value_error("chain must be None, 'sha256' or 'hmac-sha256', got '" + chain + "'");
    o.chain = *mode;
    if (chain_key && o.chain != ChainMode::hmac_sha256)
        throw pybind11::value_error("chain_key is only for chain='hmac-sha256'");
    if (!chain_key && o.chain == ChainMode::hmac_sha256)
        throw pybind11::value_error("chain='hmac-sha256' needs chain_key (a key file)");
    if (chain_key) {
        try {
            o.chain_key = ChainKey::from_file(*chain_key);
        } catch (const std::invalid_argument& e) {
            throw pybind11::value_error(e.what());
        }
    }
}

// capture: "full" | "metadata".
inline Capture capture_arg(const std::string& capture)
{
    const auto c = parse_capture(capture);
    if (!c) throw pybind11::value_error("capture must be 'full' or 'metadata', got '" + capture + "'");
    return *c;
}

}  // namespace jsonlw::python
