// The XML parser is expat (a well-kept, linear-time parser), with every DTD
// feature refused: a DOCTYPE ends the parse, so no entity is ever declared or
// expanded beyond the five predefined ones and character references.
#include "net/xml.h"

#include <expat.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

namespace strata::net {
namespace {

Status MalformedXml(std::string message) {
  return InvalidArgumentError(std::move(message)).WithForeignCode("MalformedXML");
}

// XML 1.0 forbids references to C0 controls other than tab, LF and CR, yet S3
// listings (and XmlEscape) carry them as "&#x1;" for keys holding such bytes.
// Before expat sees the document such a reference becomes a marker code point
// that does not occur in the input, followed by two hex digits; the DOM
// builder turns marker+digits back into the byte in text and attribute values.
class ControlRefs {
 public:
  // Picks a marker in U+E000..U+E0FF absent from `input`; false if none is.
  bool Choose(std::string_view input) {
    bool seen[256] = {};
    for (size_t i = 0; i + 2 < input.size(); ++i) {
      if (static_cast<unsigned char>(input[i]) == 0xEE && static_cast<unsigned char>(input[i + 1]) >= 0x80 &&
          static_cast<unsigned char>(input[i + 1]) <= 0x83) {
        unsigned lo = static_cast<unsigned char>(input[i + 2]) & 0x3F;
        unsigned mid = static_cast<unsigned char>(input[i + 1]) & 0x03;
        seen[(mid << 6) | lo] = true;
      }
    }
    for (unsigned c = 0; c < 256; ++c) {
      if (seen[c]) continue;
      marker_ = {static_cast<char>(0xEE), static_cast<char>(0x80 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
      return true;
    }
    return false;
  }
  bool active() const { return !marker_.empty(); }
  const std::string& marker() const { return marker_; }

  // Rewrites forbidden control references outside comments, CDATA and PIs.
  std::string Rewrite(std::string_view in) const {
    std::string out;
    out.reserve(in.size());
    size_t i = 0;
    auto copy_past = [&](std::string_view end) {
      size_t e = in.find(end, i);
      size_t stop = e == std::string_view::npos ? in.size() : e + end.size();
      out.append(in.substr(i, stop - i));
      i = stop;
    };
    while (i < in.size()) {
      const char c = in[i];
      if (c == '<' && in.substr(i, 4) == "<!--") {
        copy_past("-->");
      } else if (c == '<' && in.substr(i, 9) == "<![CDATA[") {
        copy_past("]]>");
      } else if (c == '<' && in.substr(i, 2) == "<?") {
        copy_past("?>");
      } else if (c == '&' && i + 1 < in.size() && in[i + 1] == '#') {
        // Only a reference short enough to name a control byte counts: the
        // ';' is looked for within kMaxRefBytes, never further (a search to
        // the end after every "&#" made "&#&#&#..." quadratic).
        size_t semi = in.substr(i, kMaxRefBytes + 1).find(';');
        std::optional<unsigned> v;
        if (semi != std::string_view::npos) {
          semi += i;
          v = Value(in.substr(i + 2, semi - i - 2));
        }
        if (v && Forbidden(*v)) {
          char hex[3];
          std::snprintf(hex, sizeof hex, "%02X", *v);
          out += marker_;
          out += hex;
          i = semi + 1;
        } else {
          out += in[i++];
        }
      } else {
        // Plain text up to the next '<' or '&' goes over in one piece.
        size_t next = in.find_first_of("<&", i + 1);
        if (next == std::string_view::npos) next = in.size();
        out.append(in.substr(i, next - i));
        i = next;
      }
    }
    return out;
  }

  // Turns marker+2 hex digits back into the byte; false if a marker is malformed.
  bool Restore(std::string* s) const {
    if (!active() || s->find(marker_) == std::string::npos) return true;
    std::string out;
    out.reserve(s->size());
    for (size_t i = 0; i < s->size();) {
      if (s->compare(i, marker_.size(), marker_) == 0) {
        if (i + marker_.size() + 2 > s->size()) return false;
        unsigned v = 0;
        if (std::sscanf(s->c_str() + i + marker_.size(), "%2X", &v) != 1 || !Forbidden(v)) return false;
        out += static_cast<char>(v);
        i += marker_.size() + 2;
      } else {
        out += (*s)[i++];
      }
    }
    *s = std::move(out);
    return true;
  }
  bool In(std::string_view s) const { return active() && s.find(marker_) != std::string_view::npos; }

 private:
  static constexpr size_t kMaxRefBytes = 12;  // "&#x" + 8 hex digits + ';' fits
  static bool Forbidden(unsigned v) { return v >= 1 && v < 0x20 && v != '\t' && v != '\n' && v != '\r'; }
  // "x1F" or "31": the value if small, else nullopt.
  static std::optional<unsigned> Value(std::string_view digits) {
    bool hex = !digits.empty() && digits[0] == 'x';
    if (hex) digits.remove_prefix(1);
    if (digits.empty() || digits.size() > 8) return std::nullopt;
    unsigned v = 0;
    for (char c : digits) {
      int d = c >= '0' && c <= '9'          ? c - '0'
              : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
              : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                            : -1;
      if (d < 0) return std::nullopt;
      v = v * (hex ? 16 : 10) + static_cast<unsigned>(d);
    }
    return v;
  }

  std::string marker_;
};

// Refuses a start tag with more than `max` attributes before expat sees it:
// expat is linear but slow per attribute (seconds for millions), and S3
// documents carry one or two. Counts '=' outside quotes in each start tag,
// which for a well-formed document is exactly its attribute count.
Status CheckAttributeCounts(std::string_view in, size_t max) {
  size_t i = 0;
  auto skip_past = [&](std::string_view end) {
    size_t e = in.find(end, i);
    i = e == std::string_view::npos ? in.size() : e + end.size();
  };
  while ((i = in.find('<', i)) != std::string_view::npos) {
    std::string_view rest = in.substr(i);
    if (rest.starts_with("<!--")) {
      skip_past("-->");
    } else if (rest.starts_with("<![CDATA[")) {
      skip_past("]]>");
    } else if (rest.starts_with("<?")) {
      skip_past("?>");
    } else if (rest.starts_with("<!")) {
      i += 2;  // a DOCTYPE: expat refuses it
    } else {
      size_t count = 0;
      char quote = 0;
      size_t j = i + 1;
      for (; j < in.size(); ++j) {
        char c = in[j];
        if (quote) {
          if (c == quote) quote = 0;
        } else if (c == '"' || c == '\'') {
          quote = c;
        } else if (c == '=') {
          if (++count > max) {
            return MalformedXml("malformed XML at byte " + std::to_string(j) + ": more than " + std::to_string(max) +
                                " attributes in one element");
          }
        } else if (c == '>') {
          break;
        }
      }
      i = j + 1;
    }
  }
  return Status::Ok();
}

// Builds the DOM from expat's callbacks, enforcing the limits. Callbacks
// never let an exception cross expat's C frames: they stop the parser.
class ExpatDom {
 public:
  ExpatDom(const XmlLimits& limits, const ControlRefs& refs) : limits_(limits), refs_(refs) {}

  Result<XmlElement> Parse(std::string_view input) {
    XML_Parser p = XML_ParserCreate("UTF-8");
    if (p == nullptr) return UnavailableError("cannot create an XML parser (out of memory)");
    parser_ = p;
    XML_SetUserData(p, this);
    XML_SetElementHandler(p, &ExpatDom::OnStart, &ExpatDom::OnEnd);
    XML_SetCharacterDataHandler(p, &ExpatDom::OnText);
    XML_SetStartDoctypeDeclHandler(p, &ExpatDom::OnDoctype);
    XML_SetEntityDeclHandler(p, &ExpatDom::OnEntityDecl);
    XML_SetParamEntityParsing(p, XML_PARAM_ENTITY_PARSING_NEVER);
    XML_Status st = XML_Parse(p, input.data(), static_cast<int>(input.size()), XML_TRUE);
    size_t at = static_cast<size_t>(std::max<XML_Index>(0, XML_GetCurrentByteIndex(p)));
    std::string why = error_;
    if (st != XML_STATUS_OK && why.empty()) why = XML_ErrorString(XML_GetErrorCode(p));
    XML_ParserFree(p);
    if (st != XML_STATUS_OK || !why.empty()) {
      return MalformedXml("malformed XML at byte " + std::to_string(at) + ": " + why);
    }
    if (!have_root_) return MalformedXml("malformed XML at byte 0: no root element");
    return std::move(root_);
  }

 private:
  void Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    XML_StopParser(parser_, XML_FALSE);
  }

  static void OnStart(void* self_ptr, const XML_Char* name, const XML_Char** atts) {
    auto* self = static_cast<ExpatDom*>(self_ptr);
    try {
      self->Start(name, atts);
    } catch (...) {
      self->Fail("out of memory");
    }
  }
  void Start(const char* name, const char** atts) {
    if (!error_.empty()) return;
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      return Fail("nesting deeper than " + std::to_string(limits_.max_depth));
    }
    if (++elements_ > limits_.max_elements) {
      return Fail("more than " + std::to_string(limits_.max_elements) + " elements");
    }
    XmlElement* e;
    if (stack_.empty()) {
      e = &root_;
      have_root_ = true;
    } else {
      e = &stack_.back()->children.emplace_back();
    }
    e->name = name;
    if (refs_.In(e->name)) return Fail("character reference in a name");
    size_t n = 0;
    while (atts[2 * n] != nullptr) ++n;
    if (n > limits_.max_attributes) {
      return Fail("more than " + std::to_string(limits_.max_attributes) + " attributes on <" + e->name.substr(0, 64) +
                  ">");
    }
    e->attributes.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      std::string value = atts[2 * i + 1];
      if (refs_.In(atts[2 * i]) || !refs_.Restore(&value)) return Fail("bad character reference in an attribute");
      e->attributes.emplace_back(atts[2 * i], std::move(value));
    }
    stack_.push_back(e);
  }

  static void OnEnd(void* self_ptr, const XML_Char*) {
    auto* self = static_cast<ExpatDom*>(self_ptr);
    if (!self->error_.empty() || self->stack_.empty()) return;
    try {
      if (!self->refs_.Restore(&self->stack_.back()->text)) self->Fail("bad character reference in text");
    } catch (...) {
      self->Fail("out of memory");
    }
    self->stack_.pop_back();
  }

  static void OnText(void* self_ptr, const XML_Char* s, int len) {
    auto* self = static_cast<ExpatDom*>(self_ptr);
    if (!self->error_.empty() || self->stack_.empty()) return;
    try {
      self->stack_.back()->text.append(s, static_cast<size_t>(len));
    } catch (...) {
      self->Fail("out of memory");
    }
  }

  static void OnDoctype(void* self_ptr, const XML_Char*, const XML_Char*, const XML_Char*, int) {
    static_cast<ExpatDom*>(self_ptr)->Fail("DOCTYPE is not allowed");
  }
  static void OnEntityDecl(void* self_ptr, const XML_Char*, int, const XML_Char*, int, const XML_Char*, const XML_Char*,
                           const XML_Char*, const XML_Char*) {
    static_cast<ExpatDom*>(self_ptr)->Fail("entity declarations are not allowed");
  }

  const XmlLimits& limits_;
  const ControlRefs& refs_;
  XML_Parser parser_ = nullptr;
  XmlElement root_;
  bool have_root_ = false;
  std::vector<XmlElement*> stack_;  // open elements; each one's parent is not appended to while it is open
  size_t elements_ = 0;
  std::string error_;
};

}  // namespace

std::string_view XmlElement::LocalName() const {
  std::string_view n = name;
  size_t colon = n.find(':');
  return colon == std::string_view::npos ? n : n.substr(colon + 1);
}

const XmlElement* XmlElement::Child(std::string_view n) const {
  for (const auto& c : children)
    if (c.LocalName() == n) return &c;
  return nullptr;
}

std::vector<const XmlElement*> XmlElement::Children(std::string_view n) const {
  std::vector<const XmlElement*> out;
  for (const auto& c : children)
    if (c.LocalName() == n) out.push_back(&c);
  return out;
}

std::string XmlElement::ChildText(std::string_view n, std::string_view fallback) const {
  const XmlElement* c = Child(n);
  return c ? c->text : std::string(fallback);
}

const std::string* XmlElement::Attribute(std::string_view n) const {
  for (const auto& [k, v] : attributes)
    if (k == n) return &v;
  return nullptr;
}

Result<XmlElement> ParseXml(std::string_view input, const XmlLimits& limits) {
  if (input.size() > limits.max_input_bytes) {
    return MalformedXml("malformed XML at byte 0: document of " + std::to_string(input.size()) +
                        " bytes exceeds the limit of " + std::to_string(limits.max_input_bytes));
  }
  if (input.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return MalformedXml("malformed XML at byte 0: document too large");
  }
  STRATA_RETURN_IF_ERROR(CheckAttributeCounts(input, limits.max_attributes));
  ControlRefs refs;
  std::string rewritten;
  if (input.find("&#") != std::string_view::npos && refs.Choose(input)) {
    rewritten = refs.Rewrite(input);
    input = rewritten;
  }
  return ExpatDom(limits, refs).Parse(input);
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters (and CR, which parsers normalise away) as references so they survive a round trip.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
          char buf[8];
          std::snprintf(buf, sizeof buf, "&#x%X;", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

XmlWriter::XmlWriter(bool declaration) {
  if (declaration) out_ = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
}

XmlWriter& XmlWriter::Open(std::string_view name, const std::vector<std::pair<std::string, std::string>>& attributes) {
  out_ += '<';
  out_ += name;
  for (const auto& [k, v] : attributes) {
    out_ += ' ';
    out_ += k;
    out_ += "=\"";
    // Parsers turn a literal tab or newline in an attribute into a space.
    for (char c : XmlEscape(v)) {
      if (c == '\t')
        out_ += "&#x9;";
      else if (c == '\n')
        out_ += "&#xA;";
      else
        out_ += c;
    }
    out_ += '"';
  }
  out_ += '>';
  open_.emplace_back(name);
  return *this;
}

XmlWriter& XmlWriter::Close() {
  if (open_.empty()) return *this;
  out_ += "</";
  out_ += open_.back();
  out_ += '>';
  open_.pop_back();
  return *this;
}

XmlWriter& XmlWriter::Element(std::string_view name, std::string_view text) {
  out_ += '<';
  out_ += name;
  out_ += '>';
  out_ += XmlEscape(text);
  out_ += "</";
  out_ += name;
  out_ += '>';
  return *this;
}

XmlWriter& XmlWriter::Text(std::string_view text) {
  out_ += XmlEscape(text);
  return *this;
}

std::string XmlWriter::Finish() {
  while (!open_.empty()) Close();
  return std::move(out_);
}

}  // namespace strata::net
