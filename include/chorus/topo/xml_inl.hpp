// xml.hpp's bodies and its parser: compiled in every translation unit in header-only mode, once
// in libchorus in compiled mode (core/config.hpp). Included by xml.hpp; not for direct use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "topology.hpp"
#include "xml.hpp"

CHORUS_NAMESPACE_BEGIN namespace topo::xml {

namespace detail {
CHORUS_FUNC bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
CHORUS_FUNC bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == ':' || static_cast<unsigned char>(c) >= 0x80;
}

CHORUS_FUNC void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

class Parser {
 public:
  Parser(std::string_view text, const char* call) : text_(text), call_(call) {}

  Element parse() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    Element root;
    bool have_root = false;
    std::vector<Element*> open;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != '<') {
        const std::size_t start = pos_;
        while (pos_ < text_.size() && text_[pos_] != '<') advance();
        if (open.empty()) {
          for (std::size_t i = start; i < pos_; ++i) {
            if (!is_space(text_[i])) {
              fail_at(line_of(i), have_root ? "text after the root element" : "text before the root element; this is "
                                                                              "not an XML file");
            }
          }
        }
        continue;
      }
      if (starts("<!--")) {
        skip_past("-->", "comment");
      } else if (starts("<?")) {
        skip_past("?>", "processing instruction");
      } else if (starts("<![CDATA[")) {
        if (open.empty()) fail("CDATA outside the root element");
        skip_past("]]>", "CDATA section");
      } else if (starts("<!")) {
        skip_declaration();
      } else if (starts("</")) {
        const int line = line_;
        pos_ += 2;
        const std::string name = read_name("a closing tag name");
        skip_spaces();
        expect('>', "'>' to end the closing tag");
        if (open.empty()) fail_at(line, "closing tag </" + name + "> without an open element");
        if (open.back()->name != name) {
          fail_at(line, "closing tag </" + name + "> does not match <" + open.back()->name + "> opened on line " +
                            std::to_string(open.back()->line));
        }
        open.pop_back();
      } else {
        Element element;
        element.line = line_;
        ++pos_;
        element.name = read_name("an element name after '<'");
        const bool closed = read_attributes(element);
        if (open.empty()) {
          if (have_root) fail_at(element.line, "a second root element <" + element.name + ">");
          root = std::move(element);
          have_root = true;
          if (!closed) open.push_back(&root);
        } else {
          if (static_cast<int>(open.size()) >= kMaxDepth) {
            fail_at(element.line, "elements nested deeper than " + std::to_string(kMaxDepth));
          }
          Element* parent = open.back();
          parent->children.push_back(std::move(element));
          if (!closed) open.push_back(&parent->children.back());
        }
      }
    }
    if (!open.empty()) {
      fail("end of file inside <" + open.back()->name + "> opened on line " + std::to_string(open.back()->line));
    }
    if (!have_root) fail("no XML element found");
    return root;
  }

 private:
  [[noreturn]] void fail_at(int line, const std::string& what) const {
    throw topo::detail::topo_error(call_, "line ", line, ": ", what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(line_, what); }

  int line_of(std::size_t offset) const {
    int line = 1;
    for (std::size_t i = 0; i < offset && i < text_.size(); ++i) line += text_[i] == '\n';
    return line;
  }
  void advance() {
    if (text_[pos_] == '\n') ++line_;
    ++pos_;
  }
  bool starts(std::string_view prefix) const { return text_.substr(pos_, prefix.size()) == prefix; }
  void skip_spaces() {
    while (pos_ < text_.size() && is_space(text_[pos_])) advance();
  }
  void skip_past(std::string_view end, const char* what) {
    const int line = line_;
    const std::size_t found = text_.find(end, pos_ + 2);
    if (found == std::string_view::npos) fail_at(line, std::string("unterminated ") + what);
    while (pos_ < found + end.size()) advance();
  }
  // <!DOCTYPE ...> with an optional [internal subset].
  void skip_declaration() {
    const int line = line_;
    bool in_subset = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      advance();
      if (c == '[') in_subset = true;
      if (c == ']') in_subset = false;
      if (c == '>' && !in_subset) return;
    }
    fail_at(line, "unterminated <! declaration");
  }
  void expect(char c, const char* what) {
    if (pos_ >= text_.size()) fail(std::string("end of file where ") + what + " was expected");
    if (text_[pos_] != c) fail(std::string("expected ") + what + ", found '" + text_[pos_] + "'");
    advance();
  }
  std::string read_name(const char* what) {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    if (pos_ == start) {
      if (pos_ >= text_.size()) fail(std::string("end of file where ") + what + " was expected");
      fail(std::string("expected ") + what + ", found '" + text_[pos_] + "'");
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  // Returns true for an empty-element tag (<x/>).
  bool read_attributes(Element& element) {
    for (;;) {
      const bool spaced = pos_ < text_.size() && is_space(text_[pos_]);
      skip_spaces();
      if (pos_ >= text_.size()) fail_at(element.line, "end of file inside the tag <" + element.name + ">");
      if (text_[pos_] == '>') {
        advance();
        return false;
      }
      if (text_[pos_] == '/') {
        advance();
        expect('>', "'>' after '/'");
        return true;
      }
      if (!spaced) fail("expected a space before the attribute in <" + element.name + ">");
      std::string name = read_name("an attribute name, '>' or '/>'");
      skip_spaces();
      expect('=', ("'=' after attribute " + name).c_str());
      skip_spaces();
      if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '\'')) {
        fail("attribute " + name + " needs a quoted value");
      }
      const char quote = text_[pos_];
      const int value_line = line_;
      advance();
      std::string value;
      while (pos_ < text_.size() && text_[pos_] != quote) {
        const char c = text_[pos_];
        if (c == '<') fail("'<' inside the value of attribute " + name);
        if (c == '&') {
          value += read_reference();
        } else {
          value += c;
          advance();
        }
      }
      if (pos_ >= text_.size()) fail_at(value_line, "unterminated value of attribute " + name);
      advance();
      for (const auto& existing : element.attributes) {
        if (existing.first == name) fail("attribute " + name + " appears twice in <" + element.name + ">");
      }
      if (element.attributes.size() >= kMaxAttributes) fail("too many attributes in <" + element.name + ">");
      element.attributes.emplace_back(std::move(name), std::move(value));
    }
  }
  std::string read_reference() {
    const std::size_t end = text_.find(';', pos_);
    if (end == std::string_view::npos || end - pos_ > 10) fail("'&' that does not start an entity like &amp;");
    const std::string_view entity = text_.substr(pos_ + 1, end - pos_ - 1);
    std::string out;
    if (entity == "lt") out = "<";
    else if (entity == "gt") out = ">";
    else if (entity == "amp") out = "&";
    else if (entity == "quot") out = "\"";
    else if (entity == "apos") out = "'";
    else if (entity.size() >= 2 && entity[0] == '#') {
      const bool hex = entity[1] == 'x' || entity[1] == 'X';
      std::uint32_t code = 0;
      const std::string_view digits = entity.substr(hex ? 2 : 1);
      if (digits.empty()) fail("empty character reference &" + std::string(entity) + ";");
      for (char c : digits) {
        int v = -1;
        if (c >= '0' && c <= '9') v = c - '0';
        else if (hex && c >= 'a' && c <= 'f') v = c - 'a' + 10;
        else if (hex && c >= 'A' && c <= 'F') v = c - 'A' + 10;
        if (v < 0) fail("bad character reference &" + std::string(entity) + ";");
        code = code * (hex ? 16 : 10) + static_cast<std::uint32_t>(v);
      }
      if (code == 0 || code > 0x10FFFF) fail("character reference &" + std::string(entity) + "; is out of range");
      append_utf8(out, code);
    } else {
      fail("unknown entity &" + std::string(entity) + ";");
    }
    pos_ = end + 1;
    return out;
  }

  std::string_view text_;
  const char* call_;
  std::size_t pos_ = 0;
  int line_ = 1;
};
}  // namespace detail

CHORUS_FUNC Element parse(std::string_view text, const char* call) {
  return detail::Parser(text, call).parse();
}

CHORUS_FUNC std::string escape(std::string_view value) {
  std::string out;
  for (char c : value) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

CHORUS_FUNC std::string write(const Element& root) {
  std::string out;
  struct Frame {
    const Element* element;
    std::size_t next_child;
  };
  std::vector<Frame> stack;
  const auto open_tag = [&out](const Element& e, std::size_t depth) {
    out.append(depth * 2, ' ');
    out += "<" + e.name;
    for (const auto& [name, value] : e.attributes) out += " " + name + "=\"" + escape(value) + "\"";
    out += e.children.empty() ? "/>\n" : ">\n";
  };
  open_tag(root, 0);
  if (!root.children.empty()) stack.push_back({&root, 0});
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next_child == top.element->children.size()) {
      out.append((stack.size() - 1) * 2, ' ');
      out += "</" + top.element->name + ">\n";
      stack.pop_back();
      continue;
    }
    const Element& child = top.element->children[top.next_child++];
    open_tag(child, stack.size());
    if (!child.children.empty()) stack.push_back({&child, 0});
  }
  return out;
}

}  CHORUS_NAMESPACE_END  // namespace chorus::topo::xml
