#include "net/xml.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(Xml, ParsesElementsAttributesEntitiesCdata) {
  auto doc = ParseXml(
      "\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- c --><!DOCTYPE x [<!ENTITY e \"boom\">]>"
      "<s3:Root xmlns:s3=\"urn:x\" a='1 &amp; 2'>"
      "<Key>a&lt;b&gt;&quot;&apos;&amp;&#65;&#x42;&#x20AC;</Key><!-- skip --><?pi x?>"
      "<Data><![CDATA[<raw> & ]]></Data><Empty/><Empty a=\"x\" /></s3:Root>\n<!-- trailing -->");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->name, "s3:Root");
  EXPECT_EQ(doc->LocalName(), "Root");
  ASSERT_NE(doc->Attribute("a"), nullptr);
  EXPECT_EQ(*doc->Attribute("a"), "1 & 2");
  EXPECT_EQ(doc->ChildText("Key"), "a<b>\"'&AB\xE2\x82\xAC");
  EXPECT_EQ(doc->ChildText("Data"), "<raw> & ");
  EXPECT_EQ(doc->Children("Empty").size(), 2u);
  EXPECT_EQ(doc->ChildText("Missing", "dflt"), "dflt");
  EXPECT_EQ(doc->Child("Missing"), nullptr);
}

TEST(Xml, ErrorsCarryByteOffsets) {
  struct Case {
    const char* xml;
    const char* needle;
  } cases[] = {
      {"", "expected the root element"},
      {"<a>", "unterminated element"},
      {"<a></b>", "does not close"},
      {"<a>&bogus;</a>", "unknown entity"},
      {"<a>&#0;</a>", "invalid character reference"},
      {"<a>&#x110000;</a>", "out of range"},
      {"<a>&#xD800;</a>", "invalid character reference"},
      {"<a>&amp</a>", "entity"},
      {"<a b=1/>", "quoted value"},
      {"<a b='1' b='2'/>", "duplicate attribute"},
      {"<a b='<'/>", "'<' in attribute"},
      {"<a/><b/>", "content after the root"},
      {"<a><![CDATA[x</a>", "unterminated CDATA"},
      {"<a><!-- x</a>", "unterminated comment"},
      {"<1a/>", "expected a name"},
      {"<a b='1'c='2'/>", "whitespace before an attribute"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.xml);
    auto r = ParseXml(c.xml);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("at byte"), std::string::npos);
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << r.status();
  }
  auto r = ParseXml("<a><b></c></a>");
  EXPECT_NE(r.status().message().find("at byte 9"), std::string::npos) << r.status();
}

TEST(Xml, LimitsDepthSizeAndCount) {
  std::string deep;
  for (int i = 0; i < 65; ++i) deep += "<a>";
  for (int i = 0; i < 65; ++i) deep += "</a>";
  EXPECT_NE(ParseXml(deep).status().message().find("nesting deeper than 64"), std::string::npos);
  std::string ok_depth = deep.substr(3, deep.size() - 7);
  EXPECT_TRUE(ParseXml(ok_depth).ok());
  // A very deep document fails fast instead of overflowing the stack.
  std::string huge;
  for (int i = 0; i < 100000; ++i) huge += "<a>";
  EXPECT_FALSE(ParseXml(huge).ok());
  XmlLimits small;
  small.max_input_bytes = 10;
  EXPECT_FALSE(ParseXml("<a>0123456789</a>", small).ok());
  small.max_input_bytes = 1 << 20;
  small.max_elements = 3;
  EXPECT_TRUE(ParseXml("<a><b/><c/></a>", small).ok());
  EXPECT_FALSE(ParseXml("<a><b/><c/><d/></a>", small).ok());
}

TEST(Xml, WriterEscapesAndRoundTrips) {
  EXPECT_EQ(XmlEscape("a&b<c>\"d'\x01\r"), "a&amp;b&lt;c&gt;&quot;d&apos;&#x1;&#xD;");
  XmlWriter w;
  std::string tricky = "k&<>\"' \x01\r\n\xE2\x82\xAC]]>";
  w.Open("Root", {{"attr", "v\"&"}}).Element("Key", tricky).Open("Inner").Text("t<").Close();
  std::string xml = w.Finish();
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0), 0u);
  auto doc = ParseXml(xml);
  ASSERT_TRUE(doc.ok()) << doc.status() << xml;
  EXPECT_EQ(doc->ChildText("Key"), tricky);
  EXPECT_EQ(doc->ChildText("Inner"), "t<");
  EXPECT_EQ(*doc->Attribute("attr"), "v\"&");
}

}  // namespace
}  // namespace strata
