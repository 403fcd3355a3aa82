#include "net/xml.h"

#include <cstdio>

namespace strata {
namespace {

bool IsWs(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsNameChar(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return u >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == ':' || c == '-' || c == '.';
}

bool IsNameStart(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return u >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(std::string_view in, const XmlLimits& limits) : in_(in), limits_(limits) {}

  Result<XmlElement> ParseDocument() {
    if (in_.size() > limits_.max_input_bytes) {
      return Error("document of " + std::to_string(in_.size()) + " bytes exceeds the limit of " +
                   std::to_string(limits_.max_input_bytes));
    }
    if (in_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    STRATA_RETURN_IF_ERROR(SkipMisc(/*allow_doctype=*/true));
    if (pos_ >= in_.size() || in_[pos_] != '<') return Error("expected the root element");
    XmlElement root;
    STRATA_RETURN_IF_ERROR(ParseElement(&root, 1));
    STRATA_RETURN_IF_ERROR(SkipMisc(/*allow_doctype=*/false));
    if (pos_ != in_.size()) return Error("content after the root element");
    return root;
  }

 private:
  Status Error(std::string what) const {
    return InvalidArgumentError("malformed XML at byte " + std::to_string(pos_) + ": " + what)
        .WithForeignCode("MalformedXML");
  }

  bool StartsWith(std::string_view s) const { return in_.substr(pos_, s.size()) == s; }

  void SkipWs() {
    while (pos_ < in_.size() && IsWs(in_[pos_])) ++pos_;
  }

  // Skips to just past `end`; error if it never comes.
  Status SkipPast(std::string_view end, std::string_view what) {
    size_t e = in_.find(end, pos_);
    if (e == std::string_view::npos) return Error("unterminated " + std::string(what));
    pos_ = e + end.size();
    return Status::Ok();
  }

  // Whitespace, comments, processing instructions and (before the root) one DOCTYPE.
  Status SkipMisc(bool allow_doctype) {
    while (true) {
      SkipWs();
      if (StartsWith("<?")) {
        STRATA_RETURN_IF_ERROR(SkipPast("?>", "processing instruction"));
      } else if (StartsWith("<!--")) {
        pos_ += 4;
        STRATA_RETURN_IF_ERROR(SkipPast("-->", "comment"));
      } else if (allow_doctype && StartsWith("<!DOCTYPE")) {
        allow_doctype = false;
        STRATA_RETURN_IF_ERROR(SkipDoctype());
      } else {
        return Status::Ok();
      }
    }
  }

  // Skips "<!DOCTYPE ... [internal subset] >" without interpreting it: no entity is ever defined.
  Status SkipDoctype() {
    int brackets = 0;
    for (; pos_ < in_.size(); ++pos_) {
      char c = in_[pos_];
      if (c == '[') ++brackets;
      if (c == ']') --brackets;
      if (c == '>' && brackets <= 0) {
        ++pos_;
        return Status::Ok();
      }
    }
    return Error("unterminated DOCTYPE");
  }

  Status ParseName(std::string* name) {
    size_t start = pos_;
    if (pos_ >= in_.size() || !IsNameStart(in_[pos_])) return Error("expected a name");
    while (pos_ < in_.size() && IsNameChar(in_[pos_])) ++pos_;
    *name = std::string(in_.substr(start, pos_ - start));
    return Status::Ok();
  }

  // Decodes one reference at in_[pos_] == '&'.
  Status ParseReference(std::string* out) {
    size_t semi = in_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 12) return Error("unterminated entity reference");
    std::string_view ref = in_.substr(pos_ + 1, semi - pos_ - 1);
    if (ref == "amp")
      *out += '&';
    else if (ref == "lt")
      *out += '<';
    else if (ref == "gt")
      *out += '>';
    else if (ref == "quot")
      *out += '"';
    else if (ref == "apos")
      *out += '\'';
    else if (ref.size() >= 2 && ref[0] == '#') {
      bool hex = ref[1] == 'x';
      std::string_view digits = ref.substr(hex ? 2 : 1);
      if (digits.empty()) return Error("empty character reference");
      uint32_t cp = 0;
      for (char c : digits) {
        int d = (c >= '0' && c <= '9')          ? c - '0'
                : hex && (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : hex && (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                : -1;
        if (d < 0) return Error("bad character reference");
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
        if (cp > 0x10FFFF) return Error("character reference out of range");
      }
      if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) return Error("invalid character reference");
      AppendUtf8(cp, out);
    } else {
      return Error("unknown entity '&" + std::string(ref) + ";'");
    }
    pos_ = semi + 1;
    return Status::Ok();
  }

  Status ParseAttributes(XmlElement* e, bool* self_closing) {
    while (true) {
      size_t before = pos_;
      SkipWs();
      if (pos_ >= in_.size()) return Error("unterminated start tag");
      if (StartsWith("/>")) {
        pos_ += 2;
        *self_closing = true;
        return Status::Ok();
      }
      if (in_[pos_] == '>') {
        ++pos_;
        *self_closing = false;
        return Status::Ok();
      }
      if (pos_ == before) return Error("expected whitespace before an attribute");
      std::string name, value;
      STRATA_RETURN_IF_ERROR(ParseName(&name));
      SkipWs();
      if (pos_ >= in_.size() || in_[pos_] != '=') return Error("expected '=' after attribute name");
      ++pos_;
      SkipWs();
      if (pos_ >= in_.size() || (in_[pos_] != '"' && in_[pos_] != '\'')) return Error("expected a quoted value");
      char quote = in_[pos_++];
      while (true) {
        if (pos_ >= in_.size()) return Error("unterminated attribute value");
        char c = in_[pos_];
        if (c == quote) break;
        if (c == '<') return Error("'<' in attribute value");
        if (c == '&') {
          STRATA_RETURN_IF_ERROR(ParseReference(&value));
        } else {
          value += c;
          ++pos_;
        }
      }
      ++pos_;
      if (e->Attribute(name) != nullptr) return Error("duplicate attribute '" + name + "'");
      e->attributes.emplace_back(std::move(name), std::move(value));
    }
  }

  Status ParseElement(XmlElement* e, int depth) {
    if (depth > limits_.max_depth) return Error("nesting deeper than " + std::to_string(limits_.max_depth));
    if (++elements_ > limits_.max_elements)
      return Error("more than " + std::to_string(limits_.max_elements) + " elements");
    ++pos_;  // '<'
    STRATA_RETURN_IF_ERROR(ParseName(&e->name));
    bool self_closing = false;
    STRATA_RETURN_IF_ERROR(ParseAttributes(e, &self_closing));
    if (self_closing) return Status::Ok();
    while (true) {
      if (pos_ >= in_.size()) return Error("unterminated element <" + e->name.substr(0, 64) + ">");
      char c = in_[pos_];
      if (c == '&') {
        STRATA_RETURN_IF_ERROR(ParseReference(&e->text));
      } else if (c != '<') {
        e->text += c;
        ++pos_;
      } else if (StartsWith("</")) {
        pos_ += 2;
        std::string name;
        STRATA_RETURN_IF_ERROR(ParseName(&name));
        if (name != e->name)
          return Error("</" + name.substr(0, 64) + "> does not close <" + e->name.substr(0, 64) + ">");
        SkipWs();
        if (pos_ >= in_.size() || in_[pos_] != '>') return Error("expected '>'");
        ++pos_;
        return Status::Ok();
      } else if (StartsWith("<!--")) {
        pos_ += 4;
        STRATA_RETURN_IF_ERROR(SkipPast("-->", "comment"));
      } else if (StartsWith("<![CDATA[")) {
        pos_ += 9;
        size_t end = in_.find("]]>", pos_);
        if (end == std::string_view::npos) return Error("unterminated CDATA section");
        e->text.append(in_.substr(pos_, end - pos_));
        pos_ = end + 3;
      } else if (StartsWith("<?")) {
        STRATA_RETURN_IF_ERROR(SkipPast("?>", "processing instruction"));
      } else if (StartsWith("<!")) {
        return Error("unexpected markup declaration inside an element");
      } else {
        e->children.emplace_back();
        STRATA_RETURN_IF_ERROR(ParseElement(&e->children.back(), depth + 1));
      }
    }
  }

  std::string_view in_;
  const XmlLimits& limits_;
  size_t pos_ = 0;
  size_t elements_ = 0;
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
  return Parser(input, limits).ParseDocument();
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
    out_ += XmlEscape(v);
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

}  // namespace strata
