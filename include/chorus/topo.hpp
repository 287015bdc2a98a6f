// Umbrella for the topology layer: the machine model, path classes, readers (nvidia-smi text,
// NCCL XML, sysfs, NVML), the NCCL XML writer, ring and tree search. CPU tier: no CUDA needed.
// (topo/cuda_reader.hpp adds CUDA peer queries for CUDA builds; include it yourself.)
#pragma once

#include "topo/bandwidth.hpp"
#include "topo/busid.hpp"
#include "topo/cpuset.hpp"
#include "topo/detect.hpp"
#include "topo/double_tree.hpp"
#include "topo/link.hpp"
#include "topo/nccl_xml.hpp"
#include "topo/node.hpp"
#include "topo/nvml_reader.hpp"
#include "topo/nvsmi_parser.hpp"
#include "topo/nvsmi_reader.hpp"
#include "topo/path.hpp"
#include "topo/path_class.hpp"
#include "topo/report.hpp"
#include "topo/ring_search.hpp"
#include "topo/sysfs_reader.hpp"
#include "topo/text_file.hpp"
#include "topo/topology.hpp"
#include "topo/xml.hpp"
