// Crash test: a child process (crash_child) writes request traces through a durable
// RequestTraceWriter and is killed with SIGKILL at 10 seeded random moments (after a random
// number of flushed batches, while it is already submitting the next); after each, a new child
// — a new writer — opens the same files. At the end:
//   - every line of every file is valid JSON, except torn lines (at most one per crash per
//     file), each on a line of its own: the next append isolated it with '\n';
//   - every record the child's stats counted as persisted (written under fsync_batch) before
//     the kill is in the files, and every generation's sidecar verifies (the records in its
//     persisted range parse and match its count);
//   - no record appears twice.
#define CATCH_CONFIG_ENABLE_BENCHMARKING
#include <catch2/catch.hpp>

#include "common.hpp"

#include <jsonlw/request_trace_verify.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

using namespace jsonlw_test;
namespace fs = std::filesystem;

namespace {

constexpr int kCrashes = 10;

// A running crash_child with its stdout on a pipe.
class Child {
public:
    explicit Child(const std::vector<std::string>& args)
    {
        int fds[2];
        REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        const int rc = ::posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        ::close(fds[1]);
        fd_ = fds[0];
        REQUIRE(rc == 0);
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    ~Child()
    {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (fd_ >= 0) ::close(fd_);
    }

    // The next line of the child's stdout; false at EOF or after 30 s without one.
    bool next_line(std::string& line)
    {
        for (;;) {
            const auto nl = buf_.find('\n');
            if (nl != std::string::npos) {
                line = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return true;
            }
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 30'000) <= 0) return false;
            char chunk[4096];
            const ssize_t n = ::read(fd_, chunk, sizeof chunk);
            if (n <= 0) return false;
            buf_.append(chunk, static_cast<std::size_t>(n));
        }
    }

    void kill_now() { ::kill(pid_, SIGKILL); }

    // Waits for the child; returns its wait status.
    int wait()
    {
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        return status;
    }

private:
    pid_t pid_ = -1;
    int fd_ = -1;
    std::string buf_;
};

// "persisted <written> <submitted>" → written.
bool parse_persisted(const std::string& line, std::uint64_t& written)
{
    std::istringstream in(line);
    std::string word;
    std::uint64_t submitted = 0;
    return (in >> word >> written >> submitted) && word == "persisted";
}

// "tr_<run>_<seq>" of a request line.
bool run_and_seq(std::string_view line, int& run, long& seq)
{
    simdjson::dom::element doc;
    if (json_parser().parse(line.data(), line.size()).get(doc) != simdjson::SUCCESS) return false;
    std::string_view id;
    if (doc["trace_id"].get_string().get(id) != simdjson::SUCCESS) return false;
    return std::sscanf(std::string(id).c_str(), "tr_%d_%ld", &run, &seq) == 2;
}

}  // namespace

TEST_CASE("a durable writer killed with SIGKILL at 10 random moments loses no persisted record, duplicates none, and leaves at most one torn line per crash, isolated by the next writer",
          "[reliability][crash]")
{
    const char* child_exe = std::getenv("JSONLW_CRASH_CHILD");
    REQUIRE(child_exe != nullptr);
    const char* seed_env = std::getenv("JSONLW_CRASH_SEED");
    const unsigned seed = seed_env ? static_cast<unsigned>(std::strtoul(seed_env, nullptr, 10)) : 20261129u;
    INFO("seed " << seed << " (set JSONLW_CRASH_SEED to replay another)");
    std::mt19937 rng(seed);

    TempDir dir;
    std::map<int, std::uint64_t> persisted;  // per run: records counted as persisted
    std::vector<std::string> sidecars;
    for (int run = 0; run < kCrashes; ++run) {
        const int kill_after = 1 + static_cast<int>(rng() % 25);  // flushed batches
        Child child({child_exe, dir.path().string(), std::to_string(run), "stream"});
        std::string line;
        REQUIRE(child.next_line(line));
        REQUIRE(line.rfind("sidecar ", 0) == 0);
        sidecars.push_back(line.substr(8));
        std::uint64_t written = 0;
        for (int batch = 0; batch < kill_after; ++batch) {
            REQUIRE(child.next_line(line));
            INFO("child said: " << line);
            REQUIRE(parse_persisted(line, written));
        }
        child.kill_now();  // it is submitting (or writing) its next batch by now
        // Reports already in the pipe were also made before the kill.
        while (child.next_line(line)) REQUIRE(parse_persisted(line, written));
        const int status = child.wait();
        REQUIRE(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == SIGKILL);
        persisted[run] = written;
    }
    // A last writer opens the same files, isolates the last torn tail and closes cleanly.
    constexpr long kLast = 20;
    {
        Child child({child_exe, dir.path().string(), std::to_string(kCrashes), "close",
                     std::to_string(kLast)});
        std::string line;
        REQUIRE(child.next_line(line));
        sidecars.push_back(line.substr(8));
        REQUIRE(child.next_line(line));
        CHECK(line.rfind("closed ", 0) == 0);
        const int status = child.wait();
        REQUIRE(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
        persisted[kCrashes] = kLast;
    }

    // Every line of every shard.
    long lines_checked = 0, torn_total = 0;
    std::map<int, std::set<long>> found;
    std::size_t shard_files = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
        if (!e.is_regular_file() || e.path().extension() != ".jsonl") continue;
        ++shard_files;
        const std::string text = read_file(e.path());
        const auto lines = split_lines(text);
        long torn = 0;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            ++lines_checked;
            int run = -1;
            long seq = -1;
            if (!run_and_seq(lines[i], run, seq)) {
                ++torn;
                INFO(e.path() << " line " << i << ": " << lines[i].substr(0, 80));
                // Torn: a prefix of a request line (the isolating '\n' made it a line).
                const std::string_view head = R"({"event":"request")";
                CHECK(std::string_view(lines[i]).substr(0, head.size()) ==
                      head.substr(0, std::min(head.size(), lines[i].size())));
                continue;
            }
            INFO("tr_" << run << "_" << seq);
            CHECK(found[run].insert(seq).second);  // never duplicated
        }
        torn_total += torn;
        INFO(e.path());
        CHECK(torn <= kCrashes);
        // A file whose last byte is not '\n' ends in a torn line (a file the last writer
        // appended to has had it isolated already).
        if (!text.empty() && text.back() != '\n') {
            int run = -1;
            long seq = -1;
            CHECK_FALSE(run_and_seq(lines.back(), run, seq));
        }
    }
    CHECK(shard_files >= 1);

    std::uint64_t persisted_total = 0;
    for (const auto& [run, n] : persisted) {
        INFO("run " << run << ": " << n << " records persisted before the kill");
        persisted_total += n;
        const auto& seqs = found[run];
        long missing = 0;
        for (long s = 0; s < static_cast<long>(n); ++s) missing += seqs.count(s) == 0;
        CHECK(missing == 0);
        // Nothing beyond what the run submitted, and records persisted form its prefix.
        if (!seqs.empty()) CHECK(*seqs.begin() == 0);
    }

    // Every generation's sidecar: its persisted range holds exactly its persisted records.
    std::uint64_t sidecar_records = 0;
    for (const auto& side : sidecars) {
        INFO("sidecar " << side);
        REQUIRE(fs::exists(side));
        const auto v = jsonlw::verify_request_trace_shards(side);
        INFO(v.error);
        CHECK(v.consistent);
        CHECK(v.bad == 0);
        sidecar_records += v.records;
    }

    std::printf("crash test: %d SIGKILLs + 1 clean reopen, %zu shard files, %ld lines checked "
                "(%ld torn, each isolated), %llu records persisted per stats all present, "
                "%zu sidecars consistent (%llu records in their persisted ranges)\n",
                kCrashes, shard_files, lines_checked, torn_total,
                static_cast<unsigned long long>(persisted_total), sidecars.size(),
                static_cast<unsigned long long>(sidecar_records));
}
