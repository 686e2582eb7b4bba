// The sink stack's factories (sinks/sink_stack.hpp): destination, then chain, then the OTLP
// encoding — the one order, for the engine and for a user who calls them.
#include <jsonlw/sinks/sink_stack.hpp>

#include <catch2/catch.hpp>

#include <jsonlw/sinks/chain_sink.hpp>
#include <jsonlw/sinks/file_sink.hpp>
#include <jsonlw/sinks/memory_sink.hpp>
#include <jsonlw/sinks/otlp_sink.hpp>

#include <memory>
#include <stdexcept>
#include <vector>

TEST_CASE("make_sink_stack puts the destination under the chain and the chain under the OTLP encoding", "[unit][sinks]")
{
    jsonlw::WriterOptions o;
    SECTION("plain options: a FileSink with the options' rotation, nothing around it")
    {
        o.rotate_bytes = 4096;
        const auto s = jsonlw::make_sink_stack(o);
        CHECK(dynamic_cast<jsonlw::FileSink*>(s.get()) != nullptr);
    }
    SECTION("a sink of the options' own is the destination itself")
    {
        o.sink = std::make_shared<jsonlw::MemorySink>();
        CHECK(jsonlw::make_sink_stack(o) == o.sink);
    }
    SECTION("chain and OTLP: OtlpSink(ChainSink(destination))")
    {
        o.sink = std::make_shared<jsonlw::MemorySink>();
        o.chain = jsonlw::ChainMode::sha256;
        o.format = jsonlw::LineFormat::otlp;
        const auto s = jsonlw::make_sink_stack(o);
        const auto* otlp = dynamic_cast<jsonlw::OtlpSink*>(s.get());
        REQUIRE(otlp != nullptr);
        const auto* chain = dynamic_cast<jsonlw::ChainSink*>(otlp->inner().get());
        REQUIRE(chain != nullptr);
        CHECK(chain->inner() == o.sink);
    }
    SECTION("a chain key without hmac-sha256 is refused")
    {
        o.sink = std::make_shared<jsonlw::MemorySink>();
        o.chain_key = jsonlw::ChainKey{std::string(32, 'k')};
        CHECK_THROWS_AS(jsonlw::make_sink_stack(o), std::invalid_argument);
    }
}
