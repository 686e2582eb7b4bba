#include <jsonlw/report/detail/report_raw.hpp>

#include <jsonlw/snapshot/first_gen.hpp>

#include <cmath>
#include <string_view>

namespace jsonlw::tools {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

void count_in(std::map<std::string, std::uint64_t, std::less<>>& m, std::uint64_t& other,
              std::string_view key, std::uint64_t n = 1)
{
    if (auto it = m.find(key); it != m.end()) it->second += n;
    else if (m.size() < 32) m.emplace(std::string(key), n);
    else other += n;
}

void merge_counts(std::map<std::string, std::uint64_t, std::less<>>& into, std::uint64_t& other,
                  const std::map<std::string, std::uint64_t, std::less<>>& from)
{
    for (const auto& [k, v] : from) count_in(into, other, k, v);
}

bool flag(object o, std::string_view key) noexcept
{
    bool b = false;
    return o.at_key(key).get(b) == simdjson::SUCCESS && b;
}

// The cheap check of one first_gen_logits item: {"data","shape","dtype"} and nothing else,
// shape [n, V] of positive ints, a known dtype, and as much base64 as the shape needs.
const char* check_item(element e, std::string_view& dtype_out) noexcept
{
    object item;
    if (e.get(item) != simdjson::SUCCESS) return "first_gen_logits item is not an object";
    std::string_view data, dtype;
    array shape;
    if (item.size() != 3 || item.at_key("data").get(data) != simdjson::SUCCESS ||
        item.at_key("shape").get(shape) != simdjson::SUCCESS ||
        item.at_key("dtype").get(dtype) != simdjson::SUCCESS)
        return "first_gen_logits item needs exactly data (string), shape (array), dtype (string)";
    dtype_out = dtype;
    const std::uint64_t width = dtype == "float32" ? 4 : (dtype == "float16" || dtype == "bfloat16") ? 2 : 0;
    if (width == 0) return "first_gen_logits dtype is not float16, float32 or bfloat16";
    std::uint64_t elements = 1;
    std::size_t dims = 0;
    for (const element d : shape) {
        std::int64_t v = 0;
        if (d.get(v) != simdjson::SUCCESS || v < 1 || v > (std::int64_t{1} << 31))
            return "first_gen_logits shape holds a non-positive or non-integer size";
        elements *= static_cast<std::uint64_t>(v);
        ++dims;
    }
    if (dims != 2) return "first_gen_logits shape is not [n, V]";
    const std::uint64_t bytes = elements * width;
    if (data.size() != (bytes + 2) / 3 * 4) return "first_gen_logits data length does not match its shape";
    return nullptr;
}

}  // namespace

void RawOutputAccumulator::add(object rec)
{
    ++outputs;
    array token_ids, frames;
    std::uint64_t n_tokens = 0;
    // A line written with capture = metadata (docs/writers.md, "Content capture") has digests
    // in place of token_ids and frames: num_output_tokens and frame_lens give the counts.
    std::string_view ids_digest;
    const bool metadata = rec.at_key("token_ids_sha256").get(ids_digest) == simdjson::SUCCESS;
    if (metadata || rec.at_key("token_ids").get(token_ids) == simdjson::SUCCESS) {
        std::uint64_t declared = 0;
        const bool has_declared = rec.at_key("num_output_tokens").get(declared) == simdjson::SUCCESS;
        n_tokens = metadata ? declared : token_ids.size();
        tokens += n_tokens;
        tokens_per_output.values.push_back(static_cast<double>(n_tokens));
        if (!has_declared || declared != n_tokens) ++token_count_mismatch;
    } else {
        ++schema_errors;
        ++tokens_per_output.missing;
    }
    if (rec.at_key(metadata ? "frame_lens" : "frames").get(frames) == simdjson::SUCCESS) {
        frames_per_output.values.push_back(static_cast<double>(frames.size()));
    } else {
        ++schema_errors;
        ++frames_per_output.missing;
    }
    bool consistent = true;
    if (rec.at_key("frames_consistent").get(consistent) != simdjson::SUCCESS) ++schema_errors;
    else if (!consistent) ++frames_inconsistent;
    if (flag(rec, "aborted")) ++aborted;
    if (flag(rec, "streaming")) ++streaming;
    if (flag(rec, "partial")) {
        ++partial;
        std::string_view reason;
        if (rec.at_key("end_reason").get(reason) != simdjson::SUCCESS) reason = "(none)";
        count_in(end_reasons, end_reason_other, reason);
    }
    logprobs(rec, n_tokens);
    array items;
    if (rec.at_key("first_gen_logits").get(items) == simdjson::SUCCESS) first_gen(items);
    std::uint64_t overflow = 0;
    if (rec.at_key("first_gen_logits_overflow_to_inf").get(overflow) == simdjson::SUCCESS)
        first_gen_overflow_to_inf += overflow;
}

void RawOutputAccumulator::logprobs(object rec, std::uint64_t token_count)
{
    array lp;
    if (rec.at_key("logprobs").get(lp) != simdjson::SUCCESS) return;
    ++with_logprobs;
    std::uint64_t n = 0, finite = 0;
    double sum = 0;
    for (const element e : lp) {
        ++n;
        double d = 0;
        object o;  // the older per-token object form {"token_id","logprob",...}
        if (e.get(o) == simdjson::SUCCESS) {
            element v;
            if (o.at_key("logprob").get(v) != simdjson::SUCCESS) {
                ++logprob_nulls;
                continue;
            }
            if (v.get(d) != simdjson::SUCCESS) {
                ++logprob_nulls;
                continue;
            }
        } else if (e.get(d) != simdjson::SUCCESS) {
            ++logprob_nulls;  // null (non-finite or unknown), or not a number
            continue;
        }
        if (!std::isfinite(d)) {
            ++logprob_nulls;
            continue;
        }
        ++finite;
        sum += d;
    }
    if (n != token_count) ++logprob_misaligned;
    logprob_values += finite;
    logprob_sum += sum;
    if (finite > 0) mean_logprob_per_output.values.push_back(sum / static_cast<double>(finite));
    else ++mean_logprob_per_output.missing;

    array ranks;
    if (rec.at_key("ranks").get(ranks) == simdjson::SUCCESS) {
        ++with_ranks;
        for (const element e : ranks) {
            std::int64_t r = 0;
            if (e.get(r) != simdjson::SUCCESS) continue;
            ++ranked_tokens;
            if (r == 1) ++rank1_tokens;
        }
    }
    array top;
    if (rec.at_key("top_logprobs").get(top) == simdjson::SUCCESS) {
        ++with_top;
        for (const element e : top) {
            array alternatives;
            if (e.get(alternatives) != simdjson::SUCCESS) continue;
            ++top_positions;
            top_entries += alternatives.size();
        }
    }
    array nonfinite;
    if (rec.at_key("logprobs_nonfinite").get(nonfinite) == simdjson::SUCCESS)
        nonfinite_positions += nonfinite.size();
    std::uint64_t missing = 0;
    if (rec.at_key("logprobs_missing").get(missing) == simdjson::SUCCESS) missing_positions += missing;
}

void RawOutputAccumulator::first_gen(array items)
{
    ++with_first_gen;
    for (const element e : items) {
        ++first_gen_items;
        std::string_view dtype;
        const char* problem = check_item(e, dtype);
        std::string error;
        if (!problem && verify_logits_) {
            snapshot::DecodedFirstGen decoded;
            if (!snapshot::decode_first_gen_item(simdjson::minify(e), decoded, error))
                problem = "decode";
        }
        if (problem) {
            ++first_gen_bad;
            if (first_gen_first_error.empty())
                first_gen_first_error = error.empty() ? std::string(problem) : error;
            continue;
        }
        std::uint64_t unused = 0;
        count_in(first_gen_dtypes, unused, dtype);
    }
}

void RawOutputAccumulator::merge(RawOutputAccumulator&& o)
{
    outputs += o.outputs;
    tokens += o.tokens;
    token_count_mismatch += o.token_count_mismatch;
    schema_errors += o.schema_errors;
    frames_per_output.merge(std::move(o.frames_per_output));
    tokens_per_output.merge(std::move(o.tokens_per_output));
    frames_inconsistent += o.frames_inconsistent;
    aborted += o.aborted;
    streaming += o.streaming;
    partial += o.partial;
    merge_counts(end_reasons, end_reason_other, o.end_reasons);
    end_reason_other += o.end_reason_other;
    with_logprobs += o.with_logprobs;
    logprob_values += o.logprob_values;
    logprob_nulls += o.logprob_nulls;
    logprob_misaligned += o.logprob_misaligned;
    nonfinite_positions += o.nonfinite_positions;
    missing_positions += o.missing_positions;
    logprob_sum += o.logprob_sum;
    mean_logprob_per_output.merge(std::move(o.mean_logprob_per_output));
    with_ranks += o.with_ranks;
    ranked_tokens += o.ranked_tokens;
    rank1_tokens += o.rank1_tokens;
    with_top += o.with_top;
    top_positions += o.top_positions;
    top_entries += o.top_entries;
    with_first_gen += o.with_first_gen;
    first_gen_items += o.first_gen_items;
    first_gen_bad += o.first_gen_bad;
    std::uint64_t unused = 0;
    merge_counts(first_gen_dtypes, unused, o.first_gen_dtypes);
    first_gen_overflow_to_inf += o.first_gen_overflow_to_inf;
    if (first_gen_first_error.empty()) first_gen_first_error = std::move(o.first_gen_first_error);
}

}  // namespace jsonlw::tools
