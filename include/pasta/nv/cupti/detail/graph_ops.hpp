// Operators of CUDA graph nodes: the operator current on the thread that
// created each node (stream capture, or an explicit cudaGraphAdd*Node),
// followed through the copies instantiation makes, so that the device
// records of a graph launch, which carry the executable graph's node ids,
// are charged to the operator of their capture rather than of their launch.
// Ids only, no vendor API: nv::Cupti's graph callbacks feed it
// (graph_callbacks.hpp). Program threads write, pasta's worker reads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace pasta::nv::detail {

class GraphOps {
 public:
  // Nodes are kept after their graph is destroyed: its launches' records
  // reach pasta's worker later, often after the program destroyed it (node
  // ids are never reused, graph ids growing). Past this many nodes, every
  // node is forgotten (and counted): the bound on memory, about 10 MiB.
  static constexpr std::size_t max_nodes = std::size_t{1} << 18;

  struct Stats {
    std::atomic<std::uint64_t> created{0};     // nodes created inside an operator
    std::atomic<std::uint64_t> cloned{0};      // copies of such nodes (instantiation)
    std::atomic<std::uint64_t> records{0};     // device records of graph launches
    std::atomic<std::uint64_t> at_capture{0};  // ... charged to the operator of their capture
    std::atomic<std::uint64_t> forgotten{0};   // nodes dropped at the max_nodes bound
  };

  // Node `node` of graph `graph` was created while operator `op` was
  // current on the creating thread (0: none). A node already known keeps
  // its operator: instantiation may report its copies as created too.
  void created(std::uint64_t node, std::uint32_t graph, std::uint64_t op) {
    if (op == 0) return;
    std::lock_guard lock(mutex_);
    make_room();
    if (nodes_.try_emplace(node, Node{op, graph, false}).second)
      stats_.created.fetch_add(1, std::memory_order_relaxed);
  }
  // Node `node` of graph `graph` is a copy of `original` (instantiation,
  // cudaGraphClone): it has the original's operator, whatever was current
  // when the copy was made.
  void cloned(std::uint64_t node, std::uint32_t graph, std::uint64_t original) {
    std::lock_guard lock(mutex_);
    const auto it = nodes_.find(original);
    if (it == nodes_.end()) {
      nodes_.erase(node);
      return;
    }
    const std::uint64_t op = it->second.op;
    make_room();
    nodes_.insert_or_assign(node, Node{op, graph, true});
    stats_.cloned.fetch_add(1, std::memory_order_relaxed);
  }
  // The operator current when `node`, or the node it copies, was created;
  // 0 if none is known.
  std::uint64_t op_of(std::uint64_t node) const {
    std::lock_guard lock(mutex_);
    const auto it = nodes_.find(node);
    return it == nodes_.end() ? 0 : it->second.op;
  }
  // A device record of graph node `node` whose launch was tagged with
  // `launch_op`: the operator it is charged to, counted in the stats.
  std::uint64_t charge(std::uint64_t node, std::uint64_t launch_op) {
    stats_.records.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t op = op_of(node);
    if (op == 0) return launch_op;
    stats_.at_capture.fetch_add(1, std::memory_order_relaxed);
    return op;
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return nodes_.size();
  }
  const Stats& stats() const { return stats_; }

 private:
  struct Node {
    std::uint64_t op = 0;
    std::uint32_t graph = 0;  // the graph that holds it
    bool copy = false;        // made by cloned()
  };
  void make_room() {  // under mutex_
    if (nodes_.size() < max_nodes) return;
    stats_.forgotten.fetch_add(nodes_.size(), std::memory_order_relaxed);
    nodes_.clear();
  }

  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, Node> nodes_;
  Stats stats_;
};

}  // namespace pasta::nv::detail
