// RawOutputWriter's encoder, run by its writer half on the I/O thread (and the serializer
// threads): the one JSON line a record becomes (serialize_raw_output) and the size hint a
// batch is cut by (raw_output_record_bytes). The hook that builds the records is
// raw_output_writer.cpp's, the hour folders raw_output_encoder.cpp's.
#include <jsonlw/raw_output_record.hpp>

#include "raw_output_encoder.hpp"
#include "raw_output_logprobs.hpp"

#include <jsonlw/snapshot/first_gen.hpp>
#include <jsonlw/traceparent_field.hpp>

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace jsonlw {

// A logprob that is exactly a float (what the snapshot stage computes) is written with the
// float's shortest round-trip digits (-9.929245, not -9.929244995117188): a reader gets the
// same float back, in 40 % fewer bytes. Other values as any double; non-finite as null.
void write_logprob(JsonLine& line, double d)
{
    const auto f = static_cast<float>(d);
    if (std::isfinite(d) && static_cast<double>(f) == d && f != std::trunc(f)) {
        char buf[32];
        const auto end = fmt::format_to_n(buf, sizeof buf, FMT_COMPILE("{}"), f).out;
        line.raw({buf, static_cast<std::size_t>(end - buf)});
        return;
    }
    line.number_or_null(d);
}

namespace {

using detail::ContentDigest;

// Whether a frame boundary falls inside a UTF-8 character: JSON cannot show half a
// character, so both halves become U+FFFD and the frames no longer add up to the text.
bool splits_a_character(const RawOutputRecord& r) noexcept
{
    const auto* p = reinterpret_cast<const unsigned char*>(r.frames_text.data());
    const std::size_t n = r.frames_text.size();
    const auto continuation = [](unsigned char c) { return (c & 0xC0) == 0x80; };
    for (std::size_t i = 0; i + 1 < r.frame_ends.size(); ++i) {
        const std::size_t at = r.frame_ends[i];
        if (at == 0 || at >= n || !continuation(p[at])) continue;
        std::size_t lead = at - 1;
        while (lead > 0 && at - lead < 3 && continuation(p[lead])) --lead;
        const unsigned char c = p[lead];
        const std::size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                              : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (len == 0 || lead + len <= at || lead + len > n) continue;
        bool whole = true;
        for (std::size_t k = lead + 1; k < lead + len; ++k) whole = whole && continuation(p[k]);
        if (whole) return true;
    }
    return false;
}

bool finite_entry(const TokenLogprob& t) noexcept
{
    if (!std::isfinite(t.logprob)) return false;
    return std::all_of(t.top.begin(), t.top.end(),
                       [](const TopLogprob& x) { return std::isfinite(x.logprob); });
}

// Capture::metadata's stand-ins for text, frames and token_ids (docs/writers.md, "Content
// capture"): each digest covers the bytes a reader of the full line gets — a string's
// decoded UTF-8, the compact JSON text of the ids.
void content_digests(const RawOutputRecord& r, JsonLine& line, ContentDigest& d)
{
    line.field("capture", to_string(Capture::metadata));
    d.begin();
    if (d.update_text(r.text())) line.mark_sanitized();
    line.field("text_len", d.bytes());
    d.field(line, "text_sha256");
    d.begin();
    line.key("frame_lens").begin_array();
    for (std::size_t i = 0; i < r.num_frames(); ++i) {
        const std::size_t before = d.bytes();
        if (d.update_text(r.frame(i))) line.mark_sanitized();
        line.value(d.bytes() - before);
    }
    line.end_array();
    d.field(line, "frames_sha256");
    d.begin();
    char buf[256];  // the ids' JSON text, digested a buffer at a time
    std::size_t n = 0;
    const auto put = [&](std::string_view s) {
        if (n + s.size() > sizeof buf) {
            d.update({buf, n});
            n = 0;
        }
        std::copy(s.begin(), s.end(), buf + n);
        n += s.size();
    };
    put("[");
    for (std::size_t i = 0; i < r.token_ids.size(); ++i) {
        if (i != 0) put(",");
        const fmt::format_int id(r.token_ids[i]);
        put({id.data(), id.size()});
    }
    put("]");
    d.update({buf, n});
    d.field(line, "token_ids_sha256");
}

void serialize_line(const RawOutputRecord& r, JsonLine& line, ContentDigest* digest)
{
    if (!std::is_sorted(r.frame_ends.begin(), r.frame_ends.end()) ||
        (!r.frame_ends.empty() && r.frame_ends.back() != r.frames_text.size()) ||
        (r.frame_ends.empty() && !r.frames_text.empty()))
        throw MalformedRecord("frame_ends do not match frames_text");

    const auto timestamp = [&line](std::string_view name, WallClock::time_point tp) {
        LineBuffer buf;  // inline storage: no allocation
        buf.push_back('"');
        append_utc_iso8601(buf, tp);
        buf.push_back('"');
        line.key(name).raw({buf.data(), buf.size()});
    };

    line.begin_object();
    line.field("event", std::string_view("raw_output"));
    // Strings, so that ids above 2^53 survive readers that parse numbers as doubles.
    const fmt::format_int id(r.request_id);
    line.field("request_id", std::string_view(id.data(), id.size()));
    line.key("disagg_request_id");
    if (r.disagg_request_id) {
        const fmt::format_int did(*r.disagg_request_id);
        line.string({did.data(), did.size()});
    } else {
        line.null();
    }
    line.field("output_index", r.output_index);
    timestamp("started_at", r.started_at);
    timestamp("finished_at", r.finished_at);
    line.field("streaming", r.streaming);
    line.field("aborted", r.aborted);
    if (digest) {
        content_digests(r, line, *digest);
    } else {
        line.field("text", r.text());
        line.key("frames").begin_array();
        for (std::size_t i = 0; i < r.num_frames(); ++i) line.string(r.frame(i));
        line.end_array();
        line.key("token_ids").begin_array();
        for (const std::int32_t t : r.token_ids) line.value(t);
        line.end_array();
    }
    line.field("num_output_tokens", r.token_ids.size());
    line.field("frames_consistent", r.frames_consistent && !splits_a_character(r));
    if (!r.logprobs.empty()) {
        // Parallel to token_ids: the sampled token's logprob, its rank, the top-k alternatives
        // as [id, logprob] pairs. JSON has no NaN or Infinity: a non-finite value is null and
        // its position is listed in logprobs_nonfinite.
        line.key("logprobs").begin_array();
        for (const TokenLogprob& lp : r.logprobs) write_logprob(line, lp.logprob);
        line.end_array();
        const auto ranked = [](const TokenLogprob& t) { return t.rank.has_value(); };
        if (std::any_of(r.logprobs.begin(), r.logprobs.end(), ranked)) {
            line.key("ranks").begin_array();
            for (const TokenLogprob& lp : r.logprobs) {
                if (lp.rank) line.value(*lp.rank);
                else line.null();
            }
            line.end_array();
        }
        // The alternatives are token ids: content, left out by Capture::metadata.
        const auto topped = [](const TokenLogprob& t) { return !t.top.empty(); };
        if (!digest && std::any_of(r.logprobs.begin(), r.logprobs.end(), topped)) {
            line.key("top_logprobs").begin_array();
            for (const TokenLogprob& lp : r.logprobs) {
                line.begin_array();
                for (const TopLogprob& t : lp.top) {
                    line.begin_array().value(t.token_id);
                    write_logprob(line, t.logprob);
                    line.end_array();
                }
                line.end_array();
            }
            line.end_array();
        }
        const auto nonfinite = [](const TokenLogprob& t) { return t.known && !finite_entry(t); };
        if (std::any_of(r.logprobs.begin(), r.logprobs.end(), nonfinite)) {
            line.key("logprobs_nonfinite").begin_array();
            for (std::size_t i = 0; i < r.logprobs.size(); ++i)
                if (nonfinite(r.logprobs[i])) line.value(i);
            line.end_array();
        }
        // Positions that never got per-token data (a step the snapshot stage dropped).
        if (const auto n = std::count_if(r.logprobs.begin(), r.logprobs.end(), detail::missing))
            line.field("logprobs_missing", std::uint64_t(n));
    }
    // The first token's logits row names its token (content): left out by Capture::metadata.
    if (r.first_gen_logits && !digest) {
        // TensorRT-LLM's item format, in a one-item list (one per output, as its
        // DisaggregatedParams.first_gen_logits holds one per sequence).
        const FirstGenLogitsData& f = *r.first_gen_logits;
        const char* dtype = snapshot::dtype_name(f.dtype);
        if (f.vocab < 1 || f.bytes.size() != std::size_t(f.vocab) * snapshot::itemsize(f.dtype))
            throw MalformedRecord(fmt::format("first_gen_logits: {} bytes for shape [1, {}] of {}",
                                              f.bytes.size(), f.vocab, dtype));
        std::string item;
        snapshot::append_first_gen_item(item, f.bytes, dtype, f.vocab);
        line.key("first_gen_logits").begin_array().raw(item).end_array();
        if (f.overflow_to_inf) line.field("first_gen_logits_overflow_to_inf", f.overflow_to_inf);
    }
    if (r.partial()) line.field("partial", true).field("end_reason", std::string_view(r.end_reason));
    write_traceparent(line, r.trace_context);  // last: the keys before it keep their order
    line.end_object();
}

}  // namespace

void serialize_raw_output(const RawOutputRecord& r, JsonLine& line)
{
    serialize_line(r, line, nullptr);
}

void serialize_raw_output(const RawOutputRecord& r, JsonLine& line, Capture capture)
{
    if (capture == Capture::full) return serialize_line(r, line, nullptr);
    detail::ContentDigest digest;
    serialize_line(r, line, &digest);
}

void detail::serialize_raw_output_metadata(const RawOutputRecord& r, JsonLine& line,
                                           ContentDigest& digest)
{
    serialize_line(r, line, &digest);
}

namespace {
std::size_t top_bytes(const RawOutputRecord& r) noexcept
{
    std::size_t n = 0;
    for (const TokenLogprob& t : r.logprobs) n += 32 * t.top.size();
    return n;
}
}  // namespace

std::size_t raw_output_record_bytes(const RawOutputRecord& r) noexcept
{
    // The text twice (text and frames), escapes aside; ids up to 11 characters.
    return 320 + (r.trace_context ? 70 : 0) + 2 * r.frames_text.size() + (r.reported_text ? r.reported_text->size() : 0) +
           4 * r.frame_ends.size() + 12 * r.token_ids.size() + 48 * r.logprobs.size() +
           top_bytes(r) + (r.first_gen_logits ? 96 + 4 * (r.first_gen_logits->bytes.size() + 2) / 3 : 0);
}

}  // namespace jsonlw
