#include "demo_options.hpp"
#include "option_number.hpp"

#include <jsonlw/chain_manifest.hpp>

#include <string_view>

namespace jsonlw::tools {

bool parse_demo_options(std::span<char*> args, DemoOptions& o, std::string& error)
{
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        const auto value = [&](std::string_view& v) {
            if (i + 1 >= args.size()) {
                error = std::string(a) + " needs a value";
                return false;
            }
            v = args[++i];
            return true;
        };
        std::string_view v;
        const auto bad = [&] {
            error = "bad value for " + std::string(a) + ": " + std::string(v);
            return false;
        };
        if (a == "--requests") {
            if (!value(v)) return false;
            if (!option_number(v, o.requests) || o.requests == 0) return bad();
        } else if (a == "--rate") {
            if (!value(v)) return false;
            if (!option_number(v, o.rate) || !(o.rate > 0) || o.rate > 1e7) return bad();
        } else if (a == "--concurrency") {
            if (!value(v)) return false;
            if (!option_number(v, o.concurrency) || o.concurrency == 0 || o.concurrency > 4096) return bad();
        } else if (a == "--vocab") {
            if (!value(v)) return false;
            if (!option_number(v, o.vocab) || o.vocab < 32 || o.vocab > 262144) return bad();
        } else if (a == "--seed") {
            if (!value(v)) return false;
            if (!option_number(v, o.seed)) return bad();
        } else if (a == "--out") {
            if (!value(v)) return false;
            if (v.empty()) return bad();
            o.out = std::string(v);
        } else if (a == "--backend") {
            if (!value(v)) return false;
            if (v == "auto") o.backend = snapshot::Backend::automatic;
            else if (v == "cpu") o.backend = snapshot::Backend::cpu;
            else if (v == "cuda") o.backend = snapshot::Backend::cuda;
            else return bad();
        } else if (a == "--tokens") {
            if (!value(v)) return false;
            const auto dash = v.find('-');
            if (dash == std::string_view::npos || !option_number(v.substr(0, dash), o.min_tokens) ||
                !option_number(v.substr(dash + 1), o.max_tokens) || o.min_tokens < 1 ||
                o.max_tokens < o.min_tokens || o.max_tokens > 100000)
                return bad();
        } else if (a == "--top-k") {
            if (!value(v)) return false;
            if (!option_number(v, o.top_k) || o.top_k < 1 || o.top_k > 64) return bad();
        } else if (a == "--dtype") {
            if (!value(v)) return false;
            if (v == "f32" || v == "float32") o.dtype = snapshot::LogitDType::f32;
            else if (v == "f16" || v == "float16") o.dtype = snapshot::LogitDType::f16;
            else if (v == "bf16" || v == "bfloat16") o.dtype = snapshot::LogitDType::bf16;
            else return bad();
        } else if (a == "--step-us") {
            if (!value(v)) return false;
            if (!option_number(v, o.step_us) || o.step_us > 10'000'000) return bad();
        } else if (a == "--first-gen-every") {
            if (!value(v)) return false;
            if (!option_number(v, o.first_gen_every)) return bad();
        } else if (a == "--capture") {
            if (!value(v)) return false;
            const auto c = parse_capture(v);
            if (!c) return bad();
            o.capture = *c;
        } else if (a == "--format") {
            if (!value(v)) return false;
            if (v == "jsonl") o.format = LineFormat::jsonl;
            else if (v == "otlp") o.format = LineFormat::otlp;
            else return bad();
        } else if (a == "--envelope") {
            o.envelope = true;
        } else if (a == "--chain") {
            if (!value(v)) return false;
            const auto m = parse_chain_mode(v);
            if (!m) return bad();
            o.chain = *m;
        } else if (a == "--chain-key") {
            if (!value(v)) return false;
            try {
                o.chain_key = ChainKey::from_file(std::string(v));
            } catch (const std::exception& e) {
                error = e.what();
                return false;
            }
        } else if (a == "--rotate-bytes") {
            if (!value(v)) return false;
            if (!option_number(v, o.rotate_bytes)) return bad();
        } else if (a == "--rotate-interval-ms") {
            if (!value(v)) return false;
            // Bounded so that the milliseconds fit the writer's duration type with room.
            if (!option_number(v, o.rotate_interval_ms) || o.rotate_interval_ms > 365ull * 86'400'000)
                return bad();
        } else if (a == "--retain-files") {
            if (!value(v)) return false;
            if (!option_number(v, o.retain_files)) return bad();
        } else if (a == "--retain-bytes") {
            if (!value(v)) return false;
            if (!option_number(v, o.retain_bytes)) return bad();
        } else if (a == "--retain-age-ms") {
            if (!value(v)) return false;
            if (!option_number(v, o.retain_age_ms) || o.retain_age_ms > 365ull * 86'400'000) return bad();
        } else if (a == "--kafka") {
            o.kafka = true;
        } else if (a == "--ring-slots") {
            if (!value(v)) return false;
            if (!option_number(v, o.ring_slots) || o.ring_slots < 2 || o.ring_slots > 1024) return bad();
        } else if (a == "--stage-threads") {
            if (!value(v)) return false;
            if (!option_number(v, o.stage_threads) || o.stage_threads < 0 || o.stage_threads > 256) return bad();
        } else if (a == "--stage-nice") {
            if (!value(v)) return false;
            if (!option_number(v, o.stage_nice) || o.stage_nice < 0 || o.stage_nice > 19) return bad();
        } else if (a == "--stage-wait-ms") {
            if (!value(v)) return false;
            if (!option_number(v, o.stage_wait_ms) || o.stage_wait_ms > 10'000) return bad();
        } else if (a == "--writer-queue") {
            if (!value(v)) return false;
            if (!option_number(v, o.writer_queue) || o.writer_queue > (std::size_t{1} << 24)) return bad();
        } else if (a == "--slow-disk-us") {
            if (!value(v)) return false;
            if (!option_number(v, o.slow_disk_us) || o.slow_disk_us > 10'000'000) return bad();
        } else if (a == "--server-us") {
            if (!value(v)) return false;
            if (!option_number(v, o.server_us) || o.server_us > 10'000'000) return bad();
        } else if (a == "--summary-json") {
            if (!value(v)) return false;
            if (v.empty()) return bad();
            o.summary_json = std::string(v);
        } else if (a == "--thread-stats") {
            o.thread_stats = true;
        } else {
            error = "unknown argument " + std::string(a);
            return false;
        }
    }
    if ((o.chain == ChainMode::hmac_sha256) != o.chain_key.has_value()) {
        error = o.chain_key ? "--chain-key is only for --chain hmac-sha256"
                            : "--chain hmac-sha256 needs --chain-key FILE";
        return false;
    }
    return true;
}

}  // namespace jsonlw::tools
