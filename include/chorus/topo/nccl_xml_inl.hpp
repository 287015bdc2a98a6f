// nccl_xml.hpp's bodies: the reader (nccl_xml_read_inl.hpp) and the writer (nccl_xml_write_inl.hpp).
// Included by nccl_xml.hpp when the bodies are compiled (core/config.hpp); not for direct use.
#pragma once

#include "nccl_xml_read_inl.hpp"
#include "nccl_xml_write_inl.hpp"
