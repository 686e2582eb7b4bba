// The emulated device's global-memory counters on their own (jsonlw_emu/traffic.hpp): what one
// warp-wide instruction is, its sectors and efficiency for coalesced, strided and broadcast
// lanes, lanes that a branch, a shorter inner loop or a predicate leaves out, sectors counted from the
// allocation's start, and the distinct bytes and sectors of a launch.
#include <cuda_runtime.h>
#include <jsonlw_emu/predict.hpp>
#include <jsonlw_emu/traffic.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

namespace {

using jsonlw::emu::LaunchTraffic;

__global__ void copy_strided(const float* in, float* out, int stride)
{
    st_global(out + threadIdx.x, ld_global(in + threadIdx.x * stride));
}

__global__ void broadcast(const int* in, int* out)
{
    st_global(out + threadIdx.x, ld_global(in));
}

// A loop over tiles whose inner loop only some lanes enter, as the merge kernel's.
__global__ void nested(const int* counts, const std::uint64_t* keys, std::uint64_t* sum)
{
    std::uint64_t s = 0;
    for (int p = 0; p < 4; ++p) {
        const int n = ld_global(counts + p);
        for (int j = threadIdx.x; j < n; j += 32) s += ld_global(keys + p * 64 + j);
    }
    if (threadIdx.x == 0) st_global(sum, s);
}

// Tiles of 64 key slots read flat, each lane its own slot; a predicated load leaves out the
// slots past a tile's count, as the merge kernel's flat pass does.
__global__ void flat(const int* counts, const std::uint64_t* keys, std::uint64_t* sum)
{
    std::uint64_t s = 0;
    for (int idx = threadIdx.x; idx < 4 * 64; idx += 32) {
        const int p = idx / 64, j = idx % 64;
        s += ld_global_if(j < counts[p], keys + p * 64 + j);
    }
    if (threadIdx.x == 0) st_global(sum, s);
}

struct Buffer {
    void* p = nullptr;
    explicit Buffer(std::size_t n)
    {
        REQUIRE(cudaMalloc(&p, n) == cudaSuccess);
        REQUIRE(cudaMemset(p, 0, n) == cudaSuccess);
    }
    ~Buffer() { (void)cudaFree(p); }
    template <class T>
    T* as(std::size_t byte_offset = 0) const
    {
        return reinterpret_cast<T*>(static_cast<char*>(p) + byte_offset);
    }
};

// The one launch since the last take.
LaunchTraffic traffic_of_last_launch()
{
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<LaunchTraffic> t = jsonlw::emu::take_launch_traffic();
    REQUIRE(t.size() == 1);
    return t[0];
}

// One warp over 4 tiles of 64 key slots holding 5, 40, 0 and 33 keys: kernel(counts, keys, sum).
struct TileKeys {
    Buffer counts{4 * 4}, keys{4 * 64 * 8}, sum{8};
    template <auto& kernel>
    LaunchTraffic run()
    {
        const std::vector<int> n{5, 40, 0, 33};
        REQUIRE(cudaMemcpy(counts.p, n.data(), 16, cudaMemcpyHostToDevice) == cudaSuccess);
        (void)jsonlw::emu::take_launch_traffic();
        JSONLW_LAUNCH(1, 32, 0, nullptr, kernel)(counts.as<const int>(), keys.as<const std::uint64_t>(), sum.as<std::uint64_t>());
        return traffic_of_last_launch();
    }
};

}  // namespace

TEST_CASE("Traffic: a warp's contiguous 4-byte lanes are one instruction of 4 whole sectors", "[emu][traffic]")
{
    Buffer in(64 * 4), out(64 * 4);
    (void)jsonlw::emu::take_launch_traffic();
    JSONLW_LAUNCH(1, 64, 0, nullptr, copy_strided)(in.as<const float>(), out.as<float>(), 1);
    const LaunchTraffic t = traffic_of_last_launch();
    CHECK(t.kernel == "copy_strided");
    CHECK(t.grid.x == 1u);
    CHECK(t.block.x == 64u);
    CHECK(t.loads.instructions == 2);
    CHECK(t.loads.requested_bytes == 256);
    CHECK(t.loads.used_bytes == 256);
    CHECK(t.loads.sectors == 8);
    CHECK(t.loads.sector_efficiency() == 1.0);
    CHECK(t.stores.sectors == 8);
    CHECK(t.distinct_read_bytes == 256);
    CHECK(t.distinct_read_sectors == 8);
    CHECK(t.distinct_written_sectors == 8);
    CHECK(t.buffer(in.p).loads.instructions == 2);
    CHECK(t.buffer(out.p).stores.instructions == 2);
    CHECK(t.buffer(out.p).loads.instructions == 0);
}

TEST_CASE("Traffic: lanes 32 bytes apart touch a sector each, an eighth of it used", "[emu][traffic]")
{
    Buffer in(32 * 32), out(32 * 4);
    (void)jsonlw::emu::take_launch_traffic();
    JSONLW_LAUNCH(1, 32, 0, nullptr, copy_strided)(in.as<const float>(), out.as<float>(), 8);
    const LaunchTraffic t = traffic_of_last_launch();
    CHECK(t.loads.instructions == 1);
    CHECK(t.loads.sectors == 32);
    CHECK(t.loads.sector_efficiency() == 0.125);
    CHECK(t.distinct_read_bytes == 128);
    CHECK(t.distinct_read_sectors == 32);
}

TEST_CASE("Traffic: a broadcast is one sector per warp; requested bytes count every lane", "[emu][traffic]")
{
    Buffer in(4), out(128 * 4);
    (void)jsonlw::emu::take_launch_traffic();
    JSONLW_LAUNCH(1, 128, 0, nullptr, broadcast)(in.as<const int>(), out.as<int>());
    const LaunchTraffic t = traffic_of_last_launch();
    CHECK(t.loads.instructions == 4);
    CHECK(t.loads.requested_bytes == 512);
    CHECK(t.loads.used_bytes == 16);
    CHECK(t.loads.sectors == 4);
    CHECK(t.distinct_read_bytes == 4);
    CHECK(t.distinct_read_sectors == 1);
}

TEST_CASE("Traffic: sectors count from the allocation's start, as on a GPU's 256-byte aligned memory", "[emu][traffic]")
{
    // 32 lanes of 4 bytes from byte 16: 128 bytes over 5 sectors, whatever the host address.
    Buffer in(256), out(32 * 4);
    (void)jsonlw::emu::take_launch_traffic();
    JSONLW_LAUNCH(1, 32, 0, nullptr, copy_strided)(in.as<const float>(16), out.as<float>(), 1);
    const LaunchTraffic t = traffic_of_last_launch();
    CHECK(t.loads.sectors == 5);
    CHECK(t.loads.sector_efficiency() == 128.0 / 160.0);
    CHECK(t.distinct_read_sectors == 5);
}

TEST_CASE("Traffic: lanes that a shorter inner loop leaves out are missing from that tile's instructions", "[emu][traffic]")
{
    // Keys per tile 5, 40, 0, 33: 1 + 2 + 0 + 2 instructions, not paired across tiles.
    TileKeys b;
    const LaunchTraffic t = b.run<nested>();
    const auto k = t.buffer(b.keys.p);
    CHECK(k.loads.instructions == 5);
    CHECK(k.loads.requested_bytes == (5 + 40 + 33) * 8);
    CHECK(k.loads.sectors == 2 + (8 + 2) + (8 + 1));
    CHECK(t.buffer(b.counts.p).loads.instructions == 4);   // every lane, once per tile
    CHECK(t.buffer(b.counts.p).loads.sectors == 4);
    CHECK(t.buffer(b.sum.p).stores.instructions == 1);
}

TEST_CASE("Traffic: a predicated load is one instruction for its warp, however many lanes it leaves out", "[emu][traffic]")
{
    // Keys per tile 5, 40, 0, 33 in slots of 64: 8 passes of the warp, two per tile, with
    // 5 and 0, 32 and 8, 0 and 0, 32 and 1 lanes loading: 5 instructions. Recorded per lane
    // without the passes it skipped, lane 5 would pair its first load (tile 1) with lane 0's.
    TileKeys b;
    const auto k = b.run<flat>().buffer(b.keys.p);
    CHECK(k.loads.instructions == 5);
    CHECK(k.loads.requested_bytes == (5 + 40 + 33) * 8);
    CHECK(k.loads.sectors == 2 + (8 + 2) + (8 + 1));
    CHECK(k.distinct_read_bytes == (5 + 40 + 33) * 8);
}

TEST_CASE("Traffic: the prediction is the distinct sectors at 4.8 TB/s", "[emu][traffic]")
{
    LaunchTraffic a, b;
    a.distinct_read_sectors = 1000;
    a.distinct_written_sectors = 10;
    b.distinct_read_sectors = 20;
    const jsonlw::emu::TrafficPrediction p = jsonlw::emu::predict({a, b}, 30000);
    CHECK(p.moved_bytes == 32 * 1030);
    CHECK(p.predicted_us == Approx(32.0 * 1030 / 4.8e12 * 1e6));
    CHECK(p.share == Approx(30000.0 / (32 * 1030)));
}
