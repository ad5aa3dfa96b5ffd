// nv::Cupti's CUDA graph callbacks: each kernel, memcpy or memset node
// created (by stream capture or explicitly) is recorded with the creating
// thread's operator, each copy instantiation makes with its original's
// (GraphOps, graph_ops.hpp: kept after their graph is destroyed, for the
// records that arrive later). Under
// PASTA_VERBOSE the first callbacks and graph records are logged, so one run
// shows what CUPTI reported.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <pasta/core/detail/fmt.hpp>

#include <pasta/core/log.hpp>
#include <pasta/nv/detail/cupti_api.hpp>
#include <pasta/nv/cupti/detail/graph_ops.hpp>
#include <pasta/nv/cupti/detail/op_tags.hpp>

namespace pasta::nv::detail {

inline constexpr std::array<CUpti_CallbackId, 2> graph_callbacks{
    CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED};

inline bool is_graph_callback(CUpti_CallbackId cbid) {
  for (CUpti_CallbackId id : graph_callbacks)
    if (id == cbid) return true;
  return false;
}

// Returns how many of the callbacks were enabled.
inline int enable_graph_callbacks(CUpti_SubscriberHandle subscriber) {
  int enabled = 0;
  for (CUpti_CallbackId id : graph_callbacks)
    enabled += cupti_ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, id),
                        "a CUDA graph callback");
  return enabled;
}

// Only nodes whose work leaves a device record pasta reads.
inline bool records_device_work(CUgraphNodeType type) {
  return type == CU_GRAPH_NODE_TYPE_KERNEL || type == CU_GRAPH_NODE_TYPE_MEMCPY ||
         type == CU_GRAPH_NODE_TYPE_MEMSET;
}

// Verbose lines: the first 16 graph callbacks and, apart, the first 8
// records of graph launches.
inline bool log_graph_line(bool record = false) {
  static std::atomic<int> callbacks{0}, records{0};
  return record ? records.fetch_add(1, std::memory_order_relaxed) < 8
                : callbacks.fetch_add(1, std::memory_order_relaxed) < 16;
}

inline void on_graph_callback(GraphOps& ops, CUpti_CallbackId cbid, const CUpti_ResourceData& r,
                              bool verbose) {
  const auto* g = static_cast<const CUpti_GraphData*>(r.resourceDescriptor);
  if (!g) return;
  std::uint32_t graph = 0;
  std::uint64_t node = 0, original = 0;
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: {
      if (!records_device_work(g->nodeType) || !g->node) return;
      if (g->graph) cuptiGetGraphId(g->graph, &graph);
      if (cuptiGetGraphNodeId(g->node, &node) != CUPTI_SUCCESS) return;
      const bool clone = cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED;
      if (clone &&
          (!g->originalNode || cuptiGetGraphNodeId(g->originalNode, &original) != CUPTI_SUCCESS))
        return;
      const std::uint64_t op = current_op();
      if (clone)
        ops.cloned(node, graph, original);
      else
        ops.created(node, graph, op);
      if (verbose && log_graph_line())
        pasta::detail::log(fmt::format(
            "cupti handler: graph node {} {} in graph {} (type {}){}, thread's operator {}, "
            "charged to {}",
            node, clone ? "cloned" : "created", graph, static_cast<int>(g->nodeType),
            clone ? fmt::format(" from node {}", original) : std::string{}, op, ops.op_of(node)));
      return;
    }
    default:
      return;
  }
}

// A device record of a graph launch (graph node `node`, executable graph
// `graph`), logged while lines remain.
inline void log_graph_record(std::string_view what, std::uint32_t graph, std::uint64_t node,
                             std::uint64_t launch_op, std::uint64_t op) {
  if (log_graph_line(true))
    pasta::detail::log(
        fmt::format("cupti handler: {} record of graph {} node {}: launch's operator {}, "
                    "charged to {}",
                    what, graph, node, launch_op, op));
}

inline void log_graph_summary(const GraphOps& ops) {
  const auto& s = ops.stats();
  pasta::detail::log(fmt::format(
      "cupti handler: CUDA graphs: {} nodes created inside an operator, {} copies of them; {} "
      "device records of graph launches, {} charged to the operator current at capture, {} to "
      "the operator of their launch; {} nodes still known, {} forgotten at the {} bound",
      s.created.load(), s.cloned.load(), s.records.load(), s.at_capture.load(),
      s.records.load() - s.at_capture.load(), ops.size(), s.forgotten.load(), GraphOps::max_nodes));
}

}  // namespace pasta::nv::detail
