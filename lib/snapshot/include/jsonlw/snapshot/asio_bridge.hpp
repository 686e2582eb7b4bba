// Hands a SnapshotStage's batches to an Asio executor: the BatchSink it returns does one
// asio::post per batch (never one per record) and nothing else, so it is cheap to run on a
// CUDA driver thread. The handler runs on `ex` (a writer's strand, the loop's executor) with
// the batch; dropping the batch releases its slot.
#pragma once

#include <jsonlw/snapshot/stage.hpp>

#include <boost/asio/post.hpp>

#include <memory>
#include <utility>

namespace jsonlw::snapshot {

// handler: void(SnapshotBatch&&), invoked on ex. It is shared by every posted batch, so it
// may carry state; it is never called concurrently when ex is a strand or a one-thread loop.
template <class Executor, class Handler>
BatchSink post_batches(Executor ex, Handler handler)
{
    auto shared = std::make_shared<Handler>(std::move(handler));
    return [ex = std::move(ex), shared](SnapshotBatch&& batch) {
        boost::asio::post(ex, [shared, b = std::move(batch)]() mutable { (*shared)(std::move(b)); });
    };
}

}  // namespace jsonlw::snapshot
