// RawJsonEncoder (raw_json_encoder.hpp): validation and minification of JSON text records,
// batch by batch; and the RawJsonWriter preset that uses it.
#include <jsonlw/detail/json_grammar_check.hpp>
#include <jsonlw/detail/json_minifier.hpp>
#include <jsonlw/raw_json_encoder.hpp>
#include <jsonlw/raw_json_writer.hpp>

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

namespace jsonlw {

namespace {

// What the batch pass found out about one record.
enum class Verdict : std::uint8_t {
    unknown,     // not decided by the batch pass: parse the record alone
    compact,     // valid, no whitespace outside strings: copied as is
    minify,      // valid, has whitespace outside strings
    not_object,  // valid, but not an object (and allow_any_value is off)
    invalid,     // not one valid JSON text (decide(): its error says why)
};

// Whether the valid JSON value in [p + rs, p + re), whose structural indexes (simdjson
// stage 1: every operator and the first byte of every string, number and literal) are
// s[f..g), has whitespace outside its strings. Such whitespace either leads, trails, or ends
// just before a structural index; the byte before one is never inside a string.
// In a valid value every byte outside strings is above 0x20 except whitespace (a control
// byte there is invalid JSON), so a branch-free minimum over those bytes decides it.
bool has_insignificant_ws(const char* p, std::size_t rs, std::size_t re, const std::uint32_t* s,
                          std::size_t f, std::size_t g) noexcept
{
    if (detail::is_json_whitespace(p[rs]) || detail::is_json_whitespace(p[re - 1])) return true;
    const auto* before = reinterpret_cast<const unsigned char*>(p) - 1;
    unsigned m0 = 0xFF, m1 = 0xFF;
    std::size_t k = f + 1;
    for (; k + 1 < g; k += 2) {
        m0 = std::min<unsigned>(m0, before[s[k]]);
        m1 = std::min<unsigned>(m1, before[s[k + 1]]);
    }
    if (k < g) m0 = std::min<unsigned>(m0, before[s[k]]);
    return std::min(m0, m1) <= 0x20;
}

// The verdict on one text [p, p + n), followed by simdjson::SIMDJSON_PADDING readable bytes:
// simdjson's stage 1 and the grammar walk (detail/json_grammar_check.hpp) when they decide
// it — no tape built — else a full DOM parse, whose error `err` then holds. `parser` has
// room for n bytes, or is given it (an allocation only when a longer text than any before
// arrives). Objects only unless `allow_any`.
Verdict decide(simdjson::dom::parser& parser, const char* p, std::size_t n, bool allow_any,
               simdjson::error_code& err) noexcept
{
    err = simdjson::SUCCESS;
    if (n > 0 && (parser.capacity() >= n || !parser.allocate(n, parser.max_depth()))) {
        auto& impl = *parser.implementation;
        if (!impl.stage1(reinterpret_cast<const std::uint8_t*>(p), n,
                         simdjson::stage1_mode::regular)) {
            const std::uint32_t count = impl.n_structural_indexes;
            const std::uint32_t* idx = impl.structural_indexes.get();
            const detail::GrammarWalk walk = detail::check_json_grammar(p, idx, 0, count, n);
            if (walk.verdict != detail::GrammarVerdict::unsure && walk.next == count) {
                if (!allow_any && walk.verdict != detail::GrammarVerdict::object)
                    return Verdict::not_object;
                return has_insignificant_ws(p, 0, n, idx, 0, count) ? Verdict::minify
                                                                    : Verdict::compact;
            }
        }
    }
    simdjson::dom::element root;
    if ((err = parser.parse(p, n, false).get(root))) return Verdict::invalid;
    if (!allow_any && root.type() != simdjson::dom::element_type::OBJECT)
        return Verdict::not_object;
    const auto& impl = *parser.implementation;
    return has_insignificant_ws(p, 0, n, impl.structural_indexes.get(), 0,
                                impl.n_structural_indexes)
               ? Verdict::minify
               : Verdict::compact;
}

// Above this many bytes a batch is validated record by record: the parser's buffers grow to
// the largest input they see (about 13 bytes per input byte), so a cap bounds its memory.
constexpr std::size_t max_stream_bytes = 256 * 1024;

}  // namespace

struct RawJsonEncoder::Validator {
    simdjson::dom::parser parser;
    detail::JsonMinifier minifier;        // the minify step; `parser` does the parse
    std::string scratch;                  // trusted mode: a record with CR/LF replaced
    std::vector<char> padded;             // a record copied with simdjson's padding after it
    std::vector<char> joined;             // the batch's unchecked records, '\n' after each, padded
    std::vector<std::size_t> starts;      // offset of each of them in `joined`
    std::vector<std::size_t> order;       // their indexes in `batch`
    std::vector<Verdict> verdicts;        // per record of `batch`
    std::span<const RawJsonText> batch;   // the batch the verdicts are for (empty: none)
    // For RawJsonWriterProbe: records the batch pass decided, minify passes.
    std::uint64_t batch_decided = 0;
    std::uint64_t minify_passes = 0;
};

// The parsers submitting threads borrow to validate their own texts while the writer is
// behind (check_on_submit()): made once, sized for RawJsonText::inline_capacity, so a parse
// never allocates, and no thread ever waits for one. The first owned_slots threads to check a
// text (in the process, numbered once) each own a slot outright: no locked instruction on
// their path, which would wait for every store before it — the copy into the queue's cell
// just filled among them (docs/queue.md). Later threads share the rest, each claimed with one
// exchange; one finding its slot busy leaves its text to the I/O thread.
struct RawJsonEncoder::SubmitChecks {
    struct alignas(64) Slot {
        std::atomic<bool> busy{false};          // shared slots only
        std::atomic<std::uint64_t> checked{0};  // written by the slot's holder only
        simdjson::dom::parser parser;
        char text[RawJsonText::inline_capacity + simdjson::SIMDJSON_PADDING];
    };
    static constexpr std::size_t owned_slots = 8;
    static constexpr std::size_t shared_slots = 4;
    static constexpr std::size_t slot_count = owned_slots + shared_slots;
    std::unique_ptr<Slot[]> slots{new Slot[slot_count]};

    // Each parser is sized for the longest text it checks — no such text nests deeper than
    // its length, so the depth limit never differs from the I/O thread's parser's — and
    // parses one such text once ("{", spaces, "}"): simdjson sizes its document at the first
    // parse, so check_on_submit() allocates nothing. About 10 KiB a parser.
    SubmitChecks()
    {
        constexpr std::size_t n = RawJsonText::inline_capacity;
        for (std::size_t i = 0; i < slot_count; ++i) {
            Slot& s = slots[i];
            if (s.parser.allocate(n, n + 8)) throw std::bad_alloc();
            std::memset(s.text, ' ', sizeof s.text);
            s.text[0] = '{';
            s.text[n - 1] = '}';
            simdjson::dom::element root;
            if (s.parser.parse(s.text, n, false).get(root)) throw std::bad_alloc();
        }
    }
    // The calling thread's number, in the order threads first check a text (any writer's).
    // 64 bits: a number is never given twice, so an owned slot is never shared.
    static std::uint64_t thread_number() noexcept
    {
        static std::atomic<std::uint64_t> threads{0};
        static thread_local const std::uint64_t n =
            threads.fetch_add(1, std::memory_order_relaxed);
        return n;
    }
    // Thread `n`'s slot, and whether it owns it (else it shares it, claimed by `busy`).
    Slot& slot_for(std::uint64_t n, bool& owned) noexcept
    {
        owned = n < owned_slots;
        return slots[owned ? n : owned_slots + (n - owned_slots) % shared_slots];
    }
};

RawJsonWriter::RawJsonWriter(boost::asio::any_io_executor ex, RawJsonWriterOptions opts)
    : RawJsonWriter(std::move(ex), opts, std::make_shared<RawJsonEncoder>(opts.raw, opts))
{
}

RawJsonWriter::RawJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                             RawJsonOptions raw)
    : RawJsonWriter(std::move(ex), RawJsonWriterOptions{std::move(opts), raw})
{
}

RawJsonWriter::RawJsonWriter(boost::asio::any_io_executor ex, WriterOptions opts,
                             std::shared_ptr<RawJsonEncoder> encoder)
    : JsonTextWriter(std::move(ex), std::move(opts), encoder), encoder_(encoder.get())
{
}

RawJsonEncoder::RawJsonEncoder(RawJsonOptions raw, const WriterOptions& writer) : raw_(raw)
{
    // One parser per serializer thread (slot 0: the I/O thread).
    const std::size_t slots = std::clamp<std::size_t>(writer.serializer_threads, 1, 64);
    for (std::size_t i = 0; i < slots; ++i) validators_.push_back(std::make_unique<Validator>());
    if (raw_.validation == RawJsonValidation::full && raw_.check_when_behind)
        submit_checks_ = std::make_unique<SubmitChecks>();
}

RawJsonText::Check RawJsonEncoder::check_on_submit(std::string_view text) const noexcept
{
    using Checked = RawJsonText::Checked;
    if (!submit_checks_ || text.size() > RawJsonText::inline_capacity) return {};
    bool owned;
    SubmitChecks::Slot& slot = submit_checks_->slot_for(SubmitChecks::thread_number(), owned);
    if (!owned && slot.busy.exchange(true, std::memory_order_acquire)) return {};
    // Parsed in the slot's padded copy: simdjson reads past the text, and sized for it at
    // construction, the parser allocates nothing.
    std::memcpy(slot.text, text.data(), text.size());
    simdjson::error_code err;
    RawJsonText::Check c;
    switch (decide(slot.parser, slot.text, text.size(), raw_.allow_any_value, err)) {
    case Verdict::compact: c = {Checked::compact, 0}; break;
    case Verdict::minify: c = {Checked::minify, 0}; break;
    case Verdict::not_object: c = {Checked::not_object, 0}; break;
    case Verdict::invalid:
    case Verdict::unknown: c = {Checked::invalid, static_cast<std::uint8_t>(err)}; break;
    }
    // One writer per slot at a time: a plain load and store, no locked instruction.
    slot.checked.store(slot.checked.load(std::memory_order_relaxed) + 1,
                       std::memory_order_relaxed);
    if (!owned) slot.busy.store(false, std::memory_order_release);
    return c;
}

std::uint64_t RawJsonEncoder::checked_on_submit() const noexcept
{
    std::uint64_t n = 0;
    if (!submit_checks_) return n;
    for (std::size_t i = 0; i < SubmitChecks::slot_count; ++i)
        n += submit_checks_->slots[i].checked.load(std::memory_order_relaxed);
    return n;
}

RawJsonEncoder::~RawJsonEncoder() = default;

std::uint64_t RawJsonEncoder::batch_decided() const noexcept
{
    std::uint64_t n = 0;
    for (const auto& v : validators_) n += v->batch_decided;
    return n;
}

std::uint64_t RawJsonEncoder::minify_passes() const noexcept
{
    std::uint64_t n = 0;
    for (const auto& v : validators_) n += v->minify_passes;
    return n;
}

void RawJsonEncoder::begin_chunk(std::span<const RawJsonText> chunk) noexcept
{
    begin_batch(chunk);
}

void RawJsonEncoder::begin_batch(std::span<const RawJsonText> batch) noexcept
{
    Validator& v = validator();
    v.batch = {};
    if (raw_.validation == RawJsonValidation::trusted || batch.size() < 2) return;
    // Records their submitter checked (check_on_submit()) carry their verdict: left out.
    std::size_t total = 0, unchecked = 0;
    for (const RawJsonText& t : batch)
        if (t.check().verdict() == RawJsonText::Checked::unchecked) total += t.size() + 1, ++unchecked;
    if (unchecked < 2 || total > max_stream_bytes) return;
    try {
        v.joined.resize(total + simdjson::SIMDJSON_PADDING);
        v.starts.resize(unchecked);
        v.order.resize(unchecked);
        v.verdicts.assign(batch.size(), Verdict::unknown);
    } catch (const std::bad_alloc&) {
        return;  // each record is parsed alone
    }
    char* out = v.joined.data();
    for (std::size_t i = 0, j = 0; i < batch.size(); ++i) {
        if (batch[i].check().verdict() != RawJsonText::Checked::unchecked) continue;
        v.order[j] = i;
        v.starts[j++] = static_cast<std::size_t>(out - v.joined.data());
        std::memcpy(out, batch[i].data(), batch[i].size());
        out += batch[i].size();
        *out++ = '\n';
    }
    std::memset(out, ' ', simdjson::SIMDJSON_PADDING);
    v.batch = batch;

    // Stage 1 once over the batch, then the grammar walk (detail/json_grammar_check.hpp)
    // document by document: no tape is built. A document is credited to record i only if
    // nothing but whitespace precedes it in the record, it is an object or array the walk
    // decides, and no structural follows it in the record. At the first record that is not
    // (or at a stage 1 error), the rest of the batch is left to serialize(), record by record:
    // a record credited so far is valid JSON, so stage 1 read every record up to the next
    // one with its strings where they are.
    if (v.parser.capacity() < total && v.parser.allocate(total, v.parser.max_depth())) return;
    auto& impl = *v.parser.implementation;
    if (impl.stage1(reinterpret_cast<const std::uint8_t*>(v.joined.data()), total,
                    simdjson::stage1_mode::regular))
        return;
    const std::uint32_t* idx = impl.structural_indexes.get();
    const std::uint32_t count = impl.n_structural_indexes;
    const char* p = v.joined.data();
    std::size_t i = 0;    // records credited so far: v.order[i] is the next one
    std::uint32_t f = 0;  // index of the next document's first structural
    for (; i < unchecked && f < count; ++i) {
        const std::size_t rs = v.starts[i];
        const std::size_t re = rs + batch[v.order[i]].size();
        if (idx[f] < rs || idx[f] >= re) break;
        bool head_ws = true;
        for (std::size_t k = rs; k < idx[f]; ++k)
            head_ws = head_ws && detail::is_json_whitespace(p[k]);
        if (!head_ws) break;
        const detail::GrammarWalk walk = detail::check_json_grammar(p, idx, f, count, re);
        if (walk.verdict == detail::GrammarVerdict::unsure) break;
        const std::uint32_t g = walk.next;
        if (g < count && idx[g] < re) break;
        Verdict& verdict = v.verdicts[v.order[i]];
        if (!raw_.allow_any_value && walk.verdict != detail::GrammarVerdict::object)
            verdict = Verdict::not_object;
        else
            verdict = has_insignificant_ws(p, rs, re, idx, f, g) ? Verdict::minify
                                                                 : Verdict::compact;
        f = g;
    }
    v.batch_decided += i;
}

void RawJsonEncoder::serialize_trusted(const RawJsonText& text, JsonLine& line)
{
    const char* p = text.data();
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n && detail::is_json_whitespace(p[i])) ++i;
    if (i == n) throw MalformedRecord("empty record");
    if (!raw_.allow_any_value && p[i] != '{') throw MalformedRecord("not a JSON object");
    if (!std::memchr(p, '\n', n) && !std::memchr(p, '\r', n)) {
        line.raw(text);
        return;
    }
    std::string& s = validator().scratch;
    s.assign(text);
    std::replace_if(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    line.raw(s);
    line.mark_sanitized();
}

void RawJsonEncoder::serialize(const RawJsonText& text, JsonLine& line)
{
    if (raw_.validation == RawJsonValidation::trusted) return serialize_trusted(text, line);
    Validator& v = validator();
    Verdict verdict = Verdict::unknown;
    switch (text.check().verdict()) {  // what its submitter found (check_on_submit())
    case RawJsonText::Checked::compact: verdict = Verdict::compact; break;
    case RawJsonText::Checked::minify: verdict = Verdict::minify; break;
    case RawJsonText::Checked::not_object: verdict = Verdict::not_object; break;
    case RawJsonText::Checked::invalid:
        throw MalformedRecord(fmt::format(
            "invalid JSON: {}",
            simdjson::error_message(static_cast<simdjson::error_code>(text.check().error()))));
    case RawJsonText::Checked::unchecked:
        if (!v.batch.empty() && &text >= v.batch.data() &&
            &text < v.batch.data() + v.batch.size())
            verdict = v.verdicts[static_cast<std::size_t>(&text - v.batch.data())];
        break;
    }
    if (verdict == Verdict::unknown) {
        // A text with simdjson's padding after it (an inline one up to 392 bytes, a string
        // with spare capacity) is read where it lies; another is copied into `padded` first.
        static_assert(RawJsonText::parse_padding >= simdjson::SIMDJSON_PADDING);
        const char* p = text.data();
        if (!text.padded()) {
            v.padded.resize(text.size() + simdjson::SIMDJSON_PADDING);
            std::memcpy(v.padded.data(), p, text.size());
            p = v.padded.data();
        }
        simdjson::error_code err;
        verdict = decide(v.parser, p, text.size(), raw_.allow_any_value, err);
        if (verdict == Verdict::invalid)
            throw MalformedRecord(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
    }
    switch (verdict) {
    case Verdict::not_object:
        throw MalformedRecord("not a JSON object");
    case Verdict::compact:
        line.raw(text);
        return;
    case Verdict::minify:
    case Verdict::unknown:
    case Verdict::invalid:
        break;
    }
    ++v.minify_passes;
    std::string_view json;
    if (auto err = v.minifier.minify(text, json)) throw MalformedRecord(std::move(*err));
    line.raw(json);
}

}  // namespace jsonlw
