// XML for S3 bodies: a bounded parse to a small DOM (expat underneath) and an
// escaping writer. Skips the prolog, comments and processing instructions;
// refuses a DOCTYPE, so entities are never expanded beyond the five
// predefined ones and character references. Character references to C0
// controls (which S3 writes for such keys) are accepted. Linear time.
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace strata::net {

struct XmlElement {
  std::string name;                                             // qualified name as written ("s3:Key" keeps the prefix)
  std::vector<std::pair<std::string, std::string>> attributes;  // values decoded
  std::vector<XmlElement> children;                             // element children, in order
  std::string text;  // character data directly inside (entities decoded, CDATA included)

  // The name without its namespace prefix.
  std::string_view LocalName() const;
  // First child whose local name is `name`, or nullptr.
  const XmlElement* Child(std::string_view name) const;
  // All children whose local name is `name`.
  std::vector<const XmlElement*> Children(std::string_view name) const;
  // Text of the first child named `name`, or `fallback` when there is none.
  std::string ChildText(std::string_view name, std::string_view fallback = {}) const;
  // Attribute value by exact name, or nullptr.
  const std::string* Attribute(std::string_view name) const;
};

struct XmlLimits {
  size_t max_input_bytes = 64ull << 20;
  int max_depth = 64;
  size_t max_elements = 1u << 20;
  size_t max_attributes = 64;  // per element (S3 documents carry an xmlns or two)
};

// Parses a document with exactly one root element. InvalidArgument with the
// byte offset in the message on malformed input or exceeded limits.
Result<XmlElement> ParseXml(std::string_view input, const XmlLimits& limits = {});

// Escapes & < > " ' for text and attribute values.
std::string XmlEscape(std::string_view text);

// Builds a document. Not thread-safe. Close() must match Open() calls;
// Finish() closes whatever is still open.
class XmlWriter {
 public:
  explicit XmlWriter(bool declaration = true);
  XmlWriter& Open(std::string_view name, const std::vector<std::pair<std::string, std::string>>& attributes = {});
  XmlWriter& Close();
  // <name>escaped text</name>
  XmlWriter& Element(std::string_view name, std::string_view text);
  XmlWriter& Text(std::string_view text);
  std::string Finish();

 private:
  std::string out_;
  std::vector<std::string> open_;
};

}  // namespace strata::net
