// CUDA graphs and stream capture. A graph is an ordered list of nodes (kernel, memcpy, memset or
// a captured child-graph launch); dependencies are validated but otherwise ignored: nodes run in
// insertion order. Launching an executable graph occupies the stream for the sum of its nodes'
// durations as one span, and applies the nodes' memory effects at launch. While a stream captures,
// stream work on it is appended to the capture graph instead of running.
#include <algorithm>

#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::DefaultStream;
using fake::Lock;
using fake::Op;
using fake::OpKind;

thread_local CUstreamCaptureMode t_captureMode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUgraph_st* newGraph() {
  CUgraph_st* graph = new CUgraph_st;
  fake::registerHandle(graph, fake::Kind::kGraph);
  return graph;
}

void deleteGraph(CUgraph_st* graph) {
  for (auto& node : graph->nodes) fake::unregisterHandle(node.get());
  fake::unregisterHandle(graph);
  delete graph;
}

CUgraphNode_st* appendNode(CUgraph_st* graph, const Op& op) {
  auto node = std::make_unique<CUgraphNode_st>();
  node->graph = graph;
  node->op = op;
  fake::registerHandle(node.get(), fake::Kind::kGraphNode);
  graph->nodes.push_back(std::move(node));
  return graph->nodes.back().get();
}

// Validates the graph and the dependencies, builds the op with `build(Op*)` and appends it.
template <class Build>
CUresult addNode(CUgraphNode* phNode, CUgraph hGraph, const CUgraphNode* deps, size_t numDeps, Build build) {
  if (CUresult r = fake::checkInit()) return r;
  if (phNode == nullptr || (numDeps > 0 && deps == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUgraph_st* graph = fake::lookup<CUgraph_st>(hGraph);
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < numDeps; ++i) {
    const CUgraphNode_st* dep = fake::lookup<CUgraphNode_st>(deps[i]);
    if (dep == nullptr || dep->graph != graph) return CUDA_ERROR_INVALID_VALUE;
  }
  Op op;
  if (CUresult r = build(&op)) return r;
  *phNode = appendNode(graph, op);
  return CUDA_SUCCESS;
}

template <class Params>
CUresult kernelNodeOp(const Params& p, const void* function, Op* out) {
  CUfunc_st* f = fake::resolveFunction(function);
  if (f == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (p.gridDimX == 0 || p.gridDimY == 0 || p.gridDimZ == 0 || p.blockDimX == 0 || p.blockDimY == 0 ||
      p.blockDimZ == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = fake::kernelOp(f);
  return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* phGraphExec, CUgraph hGraph) {
  if (CUresult r = fake::checkInit()) return r;
  if (phGraphExec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUgraph_st* graph = fake::lookup<CUgraph_st>(hGraph);
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphExec_st* exec = new CUgraphExec_st;
  for (const auto& node : graph->nodes) {
    exec->ops.push_back(node->op);
    exec->durationNs += node->op.durationNs;
  }
  fake::registerHandle(exec, fake::Kind::kGraphExec);
  *phGraphExec = exec;
  return CUDA_SUCCESS;
}

CUresult graphLaunch(DefaultStream d, CUgraphExec hGraphExec, CUstream hStream) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  const CUgraphExec_st* exec = fake::lookup<CUgraphExec_st>(hGraphExec);
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Op op;
  op.kind = OpKind::kGraph;
  op.durationNs = exec->durationNs;
  op.children = exec->ops;
  return fake::submitLocked(lock, hStream, d, op, false);
}

CUresult graphUpload(DefaultStream d, CUgraphExec hGraphExec, CUstream hStream) {
  return fake::withStream(hStream, d, [hGraphExec](CUstream_st*) {
    return fake::lookup<CUgraphExec_st>(hGraphExec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

CUresult instantiateWithParams(DefaultStream d, CUgraphExec* phGraphExec, CUgraph hGraph,
                               CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = instantiate(phGraphExec, hGraph);
  params->hErrNode_out = nullptr;
  params->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  return r;
}

// ---- capture ------------------------------------------------------------------------------------

CUresult beginCapture(DefaultStream d, CUstream hStream, CUgraph into, CUstreamCaptureMode mode) {
  Lock lock = fake::lockState();
  CUstream_st* stream = nullptr;
  if (CUresult r = fake::resolveStream(hStream, d, &stream)) return r;
  if (stream == stream->ctx->legacyStream) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (stream->capture != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  CUgraph_st* graph = into != nullptr ? fake::lookup<CUgraph_st>(into) : newGraph();
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  stream->capture = graph;
  stream->captureOwnsGraph = into == nullptr;
  stream->captureId = fake::nextId();
  stream->captureMode = mode;
  stream->captureTail = graph->nodes.empty() ? nullptr : graph->nodes.back().get();
  return CUDA_SUCCESS;
}

CUresult beginCaptureV1(DefaultStream d, CUstream hStream) {
  return beginCapture(d, hStream, nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult beginCaptureV2(DefaultStream d, CUstream hStream, CUstreamCaptureMode mode) {
  return beginCapture(d, hStream, nullptr, mode);
}

CUresult beginCaptureToGraph(DefaultStream d, CUstream hStream, CUgraph hGraph, const CUgraphNode* deps,
                             const CUgraphEdgeData* edgeData, size_t numDeps, CUstreamCaptureMode mode) {
  if (hGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return beginCapture(d, hStream, hGraph, mode);
}

void clearCapture(CUstream_st* stream) {
  stream->capture = nullptr;
  stream->captureOwnsGraph = false;
  stream->captureId = 0;
  stream->captureTail = nullptr;
}

CUresult endCapture(DefaultStream d, CUstream hStream, CUgraph* phGraph) {
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fake::withStream(hStream, d, [phGraph](CUstream_st* stream) {
    if (stream->capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
    *phGraph = stream->capture;
    clearCapture(stream);
    return CUDA_SUCCESS;
  });
}

CUresult isCapturing(DefaultStream d, CUstream hStream, CUstreamCaptureStatus* status) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fake::withStream(hStream, d, [status](CUstream_st* stream) {
    *status = stream->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  });
}

CUresult captureInfo(DefaultStream d, CUstream hStream, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                     const CUgraphNode** deps, const CUgraphEdgeData** edgeData, size_t* numDeps) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fake::withStream(hStream, d, [=](CUstream_st* stream) {
    bool active = stream->capture != nullptr;
    *status = active ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (id != nullptr) *id = active ? stream->captureId : 0;
    if (graph != nullptr) *graph = stream->capture;
    if (deps != nullptr) *deps = active && stream->captureTail ? &stream->captureTail : nullptr;
    if (edgeData != nullptr) *edgeData = nullptr;
    if (numDeps != nullptr) *numDeps = active && stream->captureTail ? 1 : 0;
    return CUDA_SUCCESS;
  });
}

CUresult captureInfoV1(DefaultStream d, CUstream hStream, CUstreamCaptureStatus* status, cuuint64_t* id) {
  return captureInfo(d, hStream, status, id, nullptr, nullptr, nullptr, nullptr);
}

CUresult captureInfoV2(DefaultStream d, CUstream hStream, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                       const CUgraphNode** deps, size_t* numDeps) {
  return captureInfo(d, hStream, status, id, graph, deps, nullptr, numDeps);
}

}  // namespace

namespace fake {

void captureOp(CUstream_st* stream, const Op& op) { stream->captureTail = appendNode(stream->capture, op); }

void deleteCapture(CUstream_st* stream) {
  if (stream->capture != nullptr && stream->captureOwnsGraph) deleteGraph(stream->capture);
  clearCapture(stream);
}

}  // namespace fake

// ---- graphs -------------------------------------------------------------------------------------

FAKE_API CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  if (CUresult r = fake::checkInit()) return r;
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  *phGraph = newGraph();
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuGraphDestroy(CUgraph hGraph) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  CUgraph_st* graph = fake::lookup<CUgraph_st>(hGraph);
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  deleteGraph(graph);
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                       size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return addNode(phGraphNode, hGraph, dependencies, numDependencies,
                 [nodeParams](Op* op) { return kernelNodeOp(*nodeParams, nodeParams->func, op); });
}

FAKE_API CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                          size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const void* function = nodeParams->func != nullptr ? static_cast<const void*>(nodeParams->func)
                                                     : static_cast<const void*>(nodeParams->kern);
  return addNode(phGraphNode, hGraph, dependencies, numDependencies,
                 [=](Op* op) { return kernelNodeOp(*nodeParams, function, op); });
}

FAKE_API CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                       size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return addNode(phGraphNode, hGraph, dependencies, numDependencies, [p](Op* op) {
    fake::SetDesc set;
    CUresult r = fake::makeSet(p->dst, p->pitch, p->value, p->elementSize, p->width, p->height, &set);
    if (r == CUDA_SUCCESS) *op = fake::setOp(set);
    return r;
  });
}

FAKE_API CUresult cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                       size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  if (copyParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return addNode(phGraphNode, hGraph, dependencies, numDependencies, [copyParams](Op* op) {
    fake::CopyDesc copy;
    CUresult r = fake::copyFrom3D(*copyParams, &copy);
    if (r == CUDA_SUCCESS) *op = fake::copyOp(copy);
    return r;
  });
}

FAKE_API CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  if (CUresult r = fake::checkInit()) return r;
  if (numNodes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  const CUgraph_st* graph = fake::lookup<CUgraph_st>(hGraph);
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (nodes == nullptr) {
    *numNodes = graph->nodes.size();
    return CUDA_SUCCESS;
  }
  for (size_t i = 0; i < *numNodes; ++i) {
    nodes[i] = i < graph->nodes.size() ? graph->nodes[i].get() : nullptr;
  }
  *numNodes = std::min(*numNodes, graph->nodes.size());
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  if (CUresult r = fake::checkInit()) return r;
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  const CUgraphNode_st* node = fake::lookup<CUgraphNode_st>(hNode);
  if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (node->op.kind) {
    case OpKind::kKernel: *type = CU_GRAPH_NODE_TYPE_KERNEL; break;
    case OpKind::kCopy: *type = CU_GRAPH_NODE_TYPE_MEMCPY; break;
    case OpKind::kSet: *type = CU_GRAPH_NODE_TYPE_MEMSET; break;
    case OpKind::kGraph: *type = CU_GRAPH_NODE_TYPE_GRAPH; break;
  }
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  return instantiate(phGraphExec, hGraph);
}

FAKE_API CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                     char* logBuffer, size_t bufferSize) {
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return instantiate(phGraphExec, hGraph);
}

FAKE_API CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                        char* logBuffer, size_t bufferSize) {
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return instantiate(phGraphExec, hGraph);
}

FAKE_EXPORT_PTSZ(cuGraphInstantiateWithParams, instantiateWithParams,
                 (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams),
                 (phGraphExec, hGraph, instantiateParams))
FAKE_EXPORT_PTSZ(cuGraphLaunch, graphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))
FAKE_EXPORT_PTSZ(cuGraphUpload, graphUpload, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))

FAKE_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  CUgraphExec_st* exec = fake::lookup<CUgraphExec_st>(hGraphExec);
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  fake::unregisterHandle(exec);
  delete exec;
  return CUDA_SUCCESS;
}

// ---- stream capture -----------------------------------------------------------------------------

FAKE_EXPORT_PTSZ(cuStreamBeginCapture, beginCaptureV1, (CUstream hStream), (hStream))
FAKE_EXPORT_PTSZ(cuStreamBeginCapture_v2, beginCaptureV2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))
FAKE_EXPORT_PTSZ(cuStreamBeginCaptureToGraph, beginCaptureToGraph,
                 (CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                  const CUgraphEdgeData* dependencyData, size_t numDependencies, CUstreamCaptureMode mode),
                 (hStream, hGraph, dependencies, dependencyData, numDependencies, mode))
FAKE_EXPORT_PTSZ(cuStreamEndCapture, endCapture, (CUstream hStream, CUgraph* phGraph), (hStream, phGraph))
FAKE_EXPORT_PTSZ(cuStreamIsCapturing, isCapturing, (CUstream hStream, CUstreamCaptureStatus* captureStatus),
                 (hStream, captureStatus))
FAKE_EXPORT_PTSZ(cuStreamGetCaptureInfo, captureInfoV1,
                 (CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out),
                 (hStream, captureStatus_out, id_out))
FAKE_EXPORT_PTSZ(cuStreamGetCaptureInfo_v2, captureInfoV2,
                 (CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out, CUgraph* graph_out,
                  const CUgraphNode** dependencies_out, size_t* numDependencies_out),
                 (hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out))
FAKE_EXPORT_PTSZ(cuStreamGetCaptureInfo_v3, captureInfo,
                 (CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out, CUgraph* graph_out,
                  const CUgraphNode** dependencies_out, const CUgraphEdgeData** edgeData_out,
                  size_t* numDependencies_out),
                 (hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out))

FAKE_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (CUresult r = fake::checkInit()) return r;
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, t_captureMode);
  return CUDA_SUCCESS;
}
