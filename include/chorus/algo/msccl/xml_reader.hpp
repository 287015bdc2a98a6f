// A strict reader for the XML subset MSCCL programs use: elements, attributes in single or double
// quotes, the five named entities, comments and a leading <?xml ...?> declaration. Text other than
// white space, DOCTYPE and CDATA are refused. The algo layer may not include topo's reader, and this
// one is smaller: it never recurses (a stack of open elements), bounds the nesting depth, always
// advances, and every error names the line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace algo::msccl::detail {

constexpr const char* kParseCall = "chorus::algo::parse_msccl";
constexpr int kMaxXmlDepth = 16;          // the format has four levels
constexpr std::size_t kMaxAttributes = 64;

[[noreturn]] inline void fail_at_line(int line, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, chorus::detail::concat(kParseCall, ": line ", line, ": ", what));
}

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<XmlElement> children;
  int line = 0;  // where the start tag begins, 1-based

  const std::string* attribute(std::string_view key) const {
    for (const auto& [name_, value] : attributes) {
      if (name_ == key) return &value;
    }
    return nullptr;
  }
};

class XmlReader {
 public:
  explicit XmlReader(std::string_view text) : text_(text) {}

  XmlElement read() {
    XmlElement root;
    bool have_root = false;
    std::vector<XmlElement*> open;
    for (;;) {
      skip_space();
      if (at_end()) break;
      if (text_[pos_] != '<') fail("text outside a tag (only white space may stand between elements)");
      if (starts_with("<!--")) {
        skip_past("-->", "comment");
      } else if (starts_with("<?")) {
        if (have_root) fail("a <? declaration after the root element");
        skip_past("?>", "<? declaration");
      } else if (starts_with("<!")) {
        fail("<! declarations (DOCTYPE, CDATA) are not part of the MSCCL format");
      } else if (starts_with("</")) {
        const int line = line_;
        advance(2);
        const std::string name = read_name("an element name after '</'");
        skip_space();
        expect('>', "'>' closing the end tag");
        if (open.empty()) fail_at_line(line, "end tag </" + name + "> without an open element");
        if (open.back()->name != name) {
          fail_at_line(line, "end tag </" + name + "> does not match <" + open.back()->name + "> opened on line " +
                                 std::to_string(open.back()->line));
        }
        open.pop_back();
      } else {
        bool empty = false;
        XmlElement element = read_start_tag(empty);
        XmlElement* placed = nullptr;
        if (open.empty()) {
          if (have_root) fail_at_line(element.line, "a second root element <" + element.name + ">");
          root = std::move(element);
          have_root = true;
          placed = &root;
        } else {
          if (static_cast<int>(open.size()) >= kMaxXmlDepth) {
            fail_at_line(element.line, "elements nested deeper than " + std::to_string(kMaxXmlDepth));
          }
          open.back()->children.push_back(std::move(element));
          placed = &open.back()->children.back();
        }
        if (!empty) open.push_back(placed);
      }
    }
    if (!open.empty()) {
      fail("end of input inside <" + open.back()->name + "> opened on line " + std::to_string(open.back()->line));
    }
    if (!have_root) fail("no XML element found");
    return root;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  bool starts_with(std::string_view prefix) const { return text_.substr(pos_, prefix.size()) == prefix; }
  void advance(std::size_t n = 1) {
    for (std::size_t i = 0; i < n && pos_ < text_.size(); ++i) line_ += text_[pos_++] == '\n';
  }
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == ':';
  }
  void skip_space() {
    while (!at_end() && is_space(text_[pos_])) advance();
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at_line(line_, what); }

  void skip_past(std::string_view end, const char* what) {
    const int line = line_;
    const std::size_t found = text_.find(end, pos_);
    if (found == std::string_view::npos) fail_at_line(line, std::string("unterminated ") + what);
    advance(found + end.size() - pos_);
  }

  void expect(char c, const std::string& what) {
    if (at_end()) fail("end of input where " + what + " was expected");
    if (text_[pos_] != c) fail("expected " + what + ", found '" + text_[pos_] + "'");
    advance();
  }

  std::string read_name(const char* what) {
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) advance();
    if (pos_ == start) {
      if (at_end()) fail(std::string("end of input where ") + what + " was expected");
      fail(std::string("expected ") + what + ", found '" + text_[pos_] + "'");
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  XmlElement read_start_tag(bool& empty) {
    XmlElement element;
    element.line = line_;
    advance();  // '<'
    element.name = read_name("an element name after '<'");
    for (;;) {
      const bool spaced = !at_end() && is_space(text_[pos_]);
      skip_space();
      if (at_end()) fail_at_line(element.line, "end of input inside the tag <" + element.name + ">");
      if (starts_with("/>")) {
        advance(2);
        empty = true;
        return element;
      }
      if (text_[pos_] == '>') {
        advance();
        return element;
      }
      if (!spaced) fail("expected a space before the next attribute of <" + element.name + ">");
      std::string name = read_name("an attribute name");
      skip_space();
      expect('=', "'=' after attribute " + name);
      skip_space();
      if (at_end() || (text_[pos_] != '"' && text_[pos_] != '\'')) fail("attribute " + name + " needs a quoted value");
      const char quote = text_[pos_];
      const int value_line = line_;
      advance();
      std::string value;
      while (!at_end() && text_[pos_] != quote) {
        if (text_[pos_] == '<') fail("'<' inside the value of attribute " + name);
        if (text_[pos_] == '&') {
          value += read_entity();
        } else {
          value += text_[pos_];
          advance();
        }
      }
      if (at_end()) fail_at_line(value_line, "unterminated value of attribute " + name);
      advance();  // closing quote
      if (element.attribute(name)) fail("attribute " + name + " appears twice in <" + element.name + ">");
      if (element.attributes.size() >= kMaxAttributes) fail("too many attributes in <" + element.name + ">");
      element.attributes.emplace_back(std::move(name), std::move(value));
    }
  }

  char read_entity() {
    static constexpr std::pair<std::string_view, char> kEntities[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    for (const auto& [entity, c] : kEntities) {
      if (starts_with(entity)) {
        advance(entity.size());
        return c;
      }
    }
    fail("'&' that does not start one of &amp; &lt; &gt; &quot; &apos;");
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::algo::msccl::detail
