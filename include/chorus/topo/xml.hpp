// A small XML reader and writer, just enough for NCCL's topology files: elements, attributes in
// single or double quotes, the five named entities and numeric character references, comments,
// processing instructions, a DOCTYPE and CDATA (skipped). Text content is ignored. It is built
// for untrusted input: it never recurses on the input (a stack of open elements), bounds nesting
// depth and attribute count, always advances, and reports the line of every error.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "topology.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo::xml {

constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxAttributes = 64;

struct Element {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<Element> children;
  int line = 0;  // where the start tag begins, 1-based

  const std::string* attribute(std::string_view key) const {
    for (const auto& [name_, value] : attributes) {
      if (name_ == key) return &value;
    }
    return nullptr;
  }
};

// Parses a document and returns its root element; throws chorus::Error naming `call` and the line.
CHORUS_FUNC Element parse(std::string_view text, const char* call = "xml::parse");

// Escapes an attribute value for double quotes.
CHORUS_FUNC std::string escape(std::string_view value);

// Writes an element tree, two spaces per level, empty elements as <x/>. Iterative, like the reader.
CHORUS_FUNC std::string write(const Element& root);

}  CHORUS_NAMESPACE_END  // namespace chorus::topo::xml

#if CHORUS_DEFINE_BODIES
#include "xml_inl.hpp"
#endif
