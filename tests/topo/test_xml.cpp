#include <catch2/catch.hpp>

#include <chorus/topo/xml.hpp>

#include <string>

namespace test_xml {

using chorus::Error;
namespace xml = chorus::topo::xml;

namespace {
// The error message for a document, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    xml::parse(text, "test");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("elements, attributes and lines", "[topo][xml]") {
  const xml::Element root = xml::parse(
      "<?xml version=\"1.0\"?>\n<!-- top -->\n<system version='1'>\n  <cpu numaid=\"0\">\n    <pci busid=\"a\"/>\n"
      "  </cpu>\n  <!-- <gpu dev=\"9\"/> -->\n</system>\n<!-- after -->\n");
  CHECK(root.name == "system");
  CHECK(root.line == 3);
  REQUIRE(root.attribute("version"));
  CHECK(*root.attribute("version") == "1");
  CHECK(root.attribute("missing") == nullptr);
  REQUIRE(root.children.size() == 1);
  const xml::Element& cpu = root.children[0];
  CHECK(cpu.line == 4);
  REQUIRE(cpu.children.size() == 1);
  CHECK(cpu.children[0].name == "pci");
  CHECK(cpu.children[0].line == 5);
  CHECK(cpu.children[0].children.empty());
}

TEST_CASE("entities, character references, CDATA and DOCTYPE", "[topo][xml]") {
  const xml::Element root =
      xml::parse("<!DOCTYPE x [ <!ENTITY a 'b'> ]><x v=\"&lt;&gt;&amp;&quot;&apos;&#65;&#x42;&#xe9;\">"
                 "<![CDATA[ <not> & markup ]]>text</x>");
  CHECK(*root.attribute("v") == "<>&\"'AB\xC3\xA9");
  CHECK(root.children.empty());
}

TEST_CASE("the writer escapes and the reader reads it back", "[topo][xml]") {
  xml::Element root;
  root.name = "a";
  root.attributes = {{"k", "x<y&\"z\""}};
  xml::Element child;
  child.name = "b";
  root.children.push_back(child);
  const std::string text = xml::write(root);
  CHECK(text == "<a k=\"x&lt;y&amp;&quot;z&quot;\">\n  <b/>\n</a>\n");
  const xml::Element back = xml::parse(text);
  CHECK(*back.attribute("k") == "x<y&\"z\"");
  CHECK(back.children.size() == 1);
}

TEST_CASE("malformed documents name the line and what was expected", "[topo][xml]") {
  CHECK(error_of("").find("no XML element") != std::string::npos);
  CHECK(error_of("   \n  ").find("no XML element") != std::string::npos);
  CHECK(error_of("GPU0 GPU1\n").find("line 1: text before the root") != std::string::npos);
  CHECK(error_of("<a>\n<b>\n</a>").find("line 3: closing tag </a> does not match <b> opened on line 2") !=
        std::string::npos);
  CHECK(error_of("<a>\n<b/>\n").find("end of file inside <a> opened on line 1") != std::string::npos);
  CHECK(error_of("<a x=1/>").find("attribute x needs a quoted value") != std::string::npos);
  CHECK(error_of("<a x=\"1\" x=\"2\"/>").find("appears twice") != std::string::npos);
  CHECK(error_of("<a x=\"1\"y=\"2\"/>").find("expected a space") != std::string::npos);
  CHECK(error_of("<a x=\"1/>").find("unterminated value") != std::string::npos);
  CHECK(error_of("<a x=\"&bogus;\"/>").find("unknown entity") != std::string::npos);
  CHECK(error_of("<a x=\"&#0;\"/>").find("out of range") != std::string::npos);
  CHECK(error_of("<a x=\"&#xZZ;\"/>").find("bad character reference") != std::string::npos);
  CHECK(error_of("<a x=\"a<b\"/>").find("'<' inside the value") != std::string::npos);
  CHECK(error_of("<a/><b/>").find("a second root element <b>") != std::string::npos);
  CHECK(error_of("<a/>trailing").find("text after the root") != std::string::npos);
  CHECK(error_of("</a>").find("without an open element") != std::string::npos);
  CHECK(error_of("<!-- never closed").find("unterminated comment") != std::string::npos);
  CHECK(error_of("<?xml").find("unterminated processing instruction") != std::string::npos);
  CHECK(error_of("<a><![CDATA[ x </a>").find("unterminated CDATA") != std::string::npos);
  CHECK(error_of("<!DOCTYPE").find("unterminated <! declaration") != std::string::npos);
  CHECK(error_of("< a/>").find("expected an element name") != std::string::npos);
  CHECK(error_of("<a").find("end of file inside the tag <a>") != std::string::npos);
  CHECK(error_of("<a/ >").find("'>' after '/'") != std::string::npos);
}

TEST_CASE("nesting is bounded, so deep input cannot exhaust the stack", "[topo][xml]") {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "<p>";
  const std::string message = error_of(deep);
  CHECK(message.find("nested deeper than") != std::string::npos);
  std::string ok;
  for (int i = 0; i < xml::kMaxDepth; ++i) ok += "<p>";
  for (int i = 0; i < xml::kMaxDepth; ++i) ok += "</p>";
  CHECK(error_of(ok).empty());
}

TEST_CASE("attribute count is bounded", "[topo][xml]") {
  std::string many = "<a";
  for (std::size_t i = 0; i <= xml::kMaxAttributes; ++i) many += " k" + std::to_string(i) + "=\"v\"";
  many += "/>";
  CHECK(error_of(many).find("too many attributes") != std::string::npos);
}

TEST_CASE("every error is a chorus::Error with the caller's name", "[topo][xml]") {
  CHECK_THROWS_AS(xml::parse("<a>", "read_something"), Error);
  CHECK(error_of("<a>").find("chorus::topo::test: line 1") == 0);
}

}  // namespace test_xml
