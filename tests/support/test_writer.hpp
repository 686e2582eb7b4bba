// Small writers for the tests, built as every shipped writer is: JsonlRecordWriter<Rec> given
// an encoder object (record_encoder.hpp). The engine owns the encoder until its I/O thread is
// done with it, so no writer here needs a shutdown() of its own. (The subclass form, a writer
// overriding JsonlRecordWriter's virtual functions, has its tests in
// integration/writer_subclass_adapter.cpp.)
//
// Rec is a small record; TestEncoder writes it as {"id":..,"text":..,"value":..} with JsonLine
// and fails on request: MalformedRecord (throw_malformed), a serializer bug
// (throw_other: std::runtime_error), a configured malformed error (throw_key_error: KeyError,
// which TestEncoder::malformed_error() calls malformed, as TensorRT-LLM's Python writer drops
// a record on a KeyError), and a layout bug in write_batch (fail_write_batch). Every failure
// writes part of the line first, so a test also sees that the partial output is discarded.
//
// TestEncoder counts serialize() calls (a throwing one included). Its serialize() is safe to
// run concurrently (it touches only its record, atomics and a locked set); declare_concurrent()
// (before start()) lets serializer_threads > 1 use it, and gate_serialize(n) holds serialize()
// calls until n distinct threads are inside one (or a deadline passes), once, so a test can see
// the serializer threads work at once. A test's own encoder derives from it to change one
// function (record_bytes(), write_batch()) and keeps the rest.
//
// TestWriter is the engine given a TestEncoder (its own, or the test's), with the encoder's
// counters and switches at hand. RoutedWriter's encoder lays records out by key in write_batch:
// grouped by route(record), through out.serialize_batch() (the pointer form: a group's records
// need not be adjacent in the batch) and out.append() — like a writer that keeps a file per
// key. It keeps every AppendResult for the test to look at.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>
#include <jsonlw/record_encoder.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace jsonlw_test {

struct Rec {
    int id = 0;
    std::string text;
    double value = 0;
    bool throw_malformed = false;
    bool throw_other = false;
    std::string key;
    bool throw_key_error = false;
    bool fail_write_batch = false;
};

// An error the configuration declares "cannot be represented", as TensorRT-LLM's Python writer
// drops a record whose KeyError names a missing field ('server' on a worker record).
struct KeyError : std::out_of_range {
    using std::out_of_range::out_of_range;
};

inline Rec rec(int id, std::string text = "", double value = 0)
{
    Rec r;
    r.id = id;
    r.text = text.empty() ? "r" + std::to_string(id) : std::move(text);
    r.value = value;
    return r;
}

// rec(id) with one of its failure switches on: failing(3, &Rec::throw_malformed).
inline Rec failing(int id, bool Rec::*how)
{
    Rec r = rec(id);
    r.*how = true;
    return r;
}

// The line TestEncoder writes for rec(id, text) with its value as JSON spells it.
inline std::string line_of(int id, const std::string& text, const std::string& value = "0.0")
{
    return R"({"id":)" + std::to_string(id) + R"(,"text":")" + text + R"(","value":)" + value + "}";
}

class TestEncoder : public jsonlw::RecordEncoder<Rec> {
public:
    // Threads serialize() ran on.
    std::set<std::thread::id> serialize_threads() const
    {
        std::lock_guard lock(mutex_);
        return serialize_threads_;
    }

    // serialize() calls so far, on every thread.
    std::uint64_t serialize_calls() const { return serialize_calls_.load(); }

    void declare_concurrent() { concurrent_ = true; }
    void gate_serialize(std::size_t threads) { gate_ = threads; }

    bool concurrent_serialize() const noexcept override { return concurrent_; }

    void serialize(const Rec& r, jsonlw::JsonLine& line) override
    {
        serialize_calls_.fetch_add(1);
        note_thread();
        if (gate_open_.load() < gate_) {  // once open (or past its deadline), for good
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (serialize_threads().size() < gate_ && std::chrono::steady_clock::now() < deadline)
                std::this_thread::yield();
            gate_open_.store(gate_);
        }
        line.begin_object().field("id", r.id);
        if (r.throw_malformed) throw jsonlw::MalformedRecord("record " + std::to_string(r.id) + " is bad");
        if (r.throw_other) throw std::runtime_error("serializer bug in " + std::to_string(r.id));
        if (r.throw_key_error) throw KeyError("'server'");
        line.field("text", r.text).field("value", r.value).end_object();
    }

    bool malformed_error(const std::exception& e) const noexcept override
    {
        return dynamic_cast<const KeyError*>(&e) != nullptr;
    }

    void write_batch(std::span<const Rec> batch, jsonlw::BatchOutput<Rec>& out) override
    {
        throw_if_asked(batch);
        RecordEncoder::write_batch(batch, out);
    }

protected:
    static void throw_if_asked(std::span<const Rec> batch)
    {
        for (const Rec& r : batch)
            if (r.fail_write_batch)
                throw std::runtime_error("layout bug at " + std::to_string(r.id));
    }

private:
    void note_thread()
    {
        std::lock_guard lock(mutex_);
        serialize_threads_.insert(std::this_thread::get_id());
    }

    mutable std::mutex mutex_;
    std::set<std::thread::id> serialize_threads_;
    bool concurrent_ = false;  // read once, by start()
    std::size_t gate_ = 0;
    std::atomic<std::size_t> gate_open_{0};
    std::atomic<std::uint64_t> serialize_calls_{0};
};

// The engine and a TestEncoder: no virtual function of JsonlRecordWriter overridden.
class TestWriter : public jsonlw::JsonlRecordWriter<Rec> {
public:
    TestWriter(boost::asio::any_io_executor ex, jsonlw::WriterOptions opts,
               std::shared_ptr<TestEncoder> encoder = std::make_shared<TestEncoder>())
        : JsonlRecordWriter(std::move(ex), std::move(opts), encoder), encoder_(std::move(encoder))
    {
    }

    std::set<std::thread::id> serialize_threads() const { return encoder_->serialize_threads(); }
    std::uint64_t serialize_calls() const { return encoder_->serialize_calls(); }
    // Before start(): the engine reads concurrent_serialize() once, there.
    void declare_concurrent() { encoder_->declare_concurrent(); }
    void gate_serialize(std::size_t threads) { encoder_->gate_serialize(threads); }

private:
    std::shared_ptr<TestEncoder> encoder_;
};

// TestEncoder with a layout of its own: records grouped by route(record), each group appended
// to the file its route names.
class RoutedEncoder final : public TestEncoder {
public:
    using Route = std::function<std::filesystem::path(const Rec&)>;

    explicit RoutedEncoder(Route route) : route_(std::move(route)) {}

    // What each append() returned, in order.
    std::vector<jsonlw::AppendResult> append_results() const
    {
        std::lock_guard lock(results_mutex_);
        return results_;
    }

    void write_batch(std::span<const Rec> batch, jsonlw::BatchOutput<Rec>& out) override
    {
        throw_if_asked(batch);
        // Groups in order of first appearance; submission order is kept within a group.
        std::vector<std::pair<std::filesystem::path, std::vector<const Rec*>>> groups;
        for (const Rec& r : batch) {
            std::filesystem::path p = route_(r);
            auto it = std::find_if(groups.begin(), groups.end(),
                                   [&](const auto& g) { return g.first == p; });
            if (it == groups.end()) {
                groups.emplace_back(std::move(p), std::vector<const Rec*>{});
                it = std::prev(groups.end());
            }
            it->second.push_back(&r);
        }
        for (const auto& [path, group] : groups) {
            const jsonlw::AppendResult r =
                out.append(path, out.serialize_batch(std::span<const Rec* const>(group)));
            std::lock_guard lock(results_mutex_);
            results_.push_back(r);
        }
    }

private:
    const Route route_;
    mutable std::mutex results_mutex_;
    std::vector<jsonlw::AppendResult> results_;
};

class RoutedWriter final : public TestWriter {
public:
    using Route = RoutedEncoder::Route;

    RoutedWriter(boost::asio::any_io_executor ex, jsonlw::WriterOptions opts, Route route)
        : RoutedWriter(std::move(ex), std::move(opts), std::make_shared<RoutedEncoder>(std::move(route)))
    {
    }

    // <dir>/<key>/part.jsonl
    static Route by_key(std::filesystem::path dir)
    {
        return [dir = std::move(dir)](const Rec& r) { return dir / r.key / "part.jsonl"; };
    }
    // Every record to one fixed file.
    static Route to(std::filesystem::path file)
    {
        return [file = std::move(file)](const Rec&) { return file; };
    }

    std::vector<jsonlw::AppendResult> append_results() const { return routed_->append_results(); }

private:
    RoutedWriter(boost::asio::any_io_executor ex, jsonlw::WriterOptions opts,
                 std::shared_ptr<RoutedEncoder> encoder)
        : TestWriter(std::move(ex), std::move(opts), encoder), routed_(std::move(encoder))
    {
    }

    std::shared_ptr<RoutedEncoder> routed_;
};

}  // namespace jsonlw_test
