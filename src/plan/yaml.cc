#include "plan/yaml.h"

#include <yaml.h>

#include <charconv>
#include <cstdlib>
#include <memory>

namespace strata::plan {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 32;

// YAML 1.2 core schema for plain scalars.
json PlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i = 0;
  auto [iend, iec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (iec == std::errc() && iend == s.data() + s.size()) return i;
  // Decimal numbers only ("1e3", "2.5"); "0x10", "inf", "nan" stay strings.
  if (s.find_first_not_of("0123456789+-.eE") == std::string::npos) {
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size()) return d;
  }
  return s;
}

class Parser {
 public:
  explicit Parser(std::string_view text) {
    yaml_parser_initialize(&p_);
    yaml_parser_set_input_string(&p_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  }
  ~Parser() {
    if (peeked_) yaml_event_delete(&peek_);
    yaml_parser_delete(&p_);
  }

  Result<YamlDocument> Run() {
    YamlDocument out;
    yaml_event_t ev;
    STRATA_RETURN_IF_ERROR(Next(&ev));  // stream start
    yaml_event_delete(&ev);
    STRATA_RETURN_IF_ERROR(Next(&ev));
    if (ev.type == YAML_STREAM_END_EVENT) {
      yaml_event_delete(&ev);
      out.doc = json::object();  // an empty file: no fields
      return out;
    }
    yaml_event_delete(&ev);  // document start
    STRATA_RETURN_IF_ERROR(Node("", 0, &out.doc, &out.lines));
    STRATA_RETURN_IF_ERROR(Next(&ev));  // document end
    yaml_event_delete(&ev);
    STRATA_RETURN_IF_ERROR(Next(&ev));
    const bool more = ev.type != YAML_STREAM_END_EVENT;
    const int line = int(ev.start_mark.line) + 1;
    yaml_event_delete(&ev);
    if (more) return InvalidArgumentError("line " + std::to_string(line) + ": a second YAML document");
    return out;
  }

 private:
  Status Next(yaml_event_t* ev) {
    if (peeked_) {
      *ev = peek_;
      peeked_ = false;
      return Status::Ok();
    }
    // After a failed Peek the parser holds the error and hands out empty events.
    if (p_.error != YAML_NO_ERROR || !yaml_parser_parse(&p_, ev)) {
      std::string what = p_.problem ? p_.problem : "not valid YAML";
      if (p_.context) what = std::string(p_.context) + ": " + what;
      return InvalidArgumentError("line " + std::to_string(p_.problem_mark.line + 1) + ": not valid YAML: " + what);
    }
    return Status::Ok();
  }

  static std::string Line(const yaml_event_t& ev) { return "line " + std::to_string(ev.start_mark.line + 1); }

  // Reads one node (its first event included) into *out.
  Status Node(const std::string& path, int depth, json* out, std::map<std::string, int>* lines) {
    yaml_event_t ev;
    STRATA_RETURN_IF_ERROR(Next(&ev));
    std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> guard(&ev, yaml_event_delete);
    const std::string where = Line(ev) + ": " + (path.empty() ? "(top level)" : path);
    if (!path.empty()) (*lines)[path] = int(ev.start_mark.line) + 1;
    if (depth > kMaxDepth) return InvalidArgumentError(where + ": nested too deeply");
    switch (ev.type) {
      case YAML_ALIAS_EVENT: return InvalidArgumentError(where + ": aliases are not supported");
      case YAML_SCALAR_EVENT: {
        if (ev.data.scalar.anchor) return InvalidArgumentError(where + ": anchors are not supported");
        std::string s(reinterpret_cast<const char*>(ev.data.scalar.value), ev.data.scalar.length);
        *out = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? PlainScalar(s) : json(s);
        return Status::Ok();
      }
      case YAML_SEQUENCE_START_EVENT: {
        if (ev.data.sequence_start.anchor) return InvalidArgumentError(where + ": anchors are not supported");
        *out = json::array();
        for (size_t i = 0;; ++i) {
          if (Peek() == YAML_SEQUENCE_END_EVENT) return Skip();
          json item;
          STRATA_RETURN_IF_ERROR(Node(path + "[" + std::to_string(i) + "]", depth + 1, &item, lines));
          out->push_back(std::move(item));
        }
      }
      case YAML_MAPPING_START_EVENT: {
        if (ev.data.mapping_start.anchor) return InvalidArgumentError(where + ": anchors are not supported");
        *out = json::object();
        for (;;) {
          if (Peek() == YAML_MAPPING_END_EVENT) return Skip();
          yaml_event_t key;
          STRATA_RETURN_IF_ERROR(Next(&key));
          std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> key_guard(&key, yaml_event_delete);
          if (key.type != YAML_SCALAR_EVENT)
            return InvalidArgumentError(Line(key) + ": " + path + ": keys must be scalars");
          const std::string name(reinterpret_cast<const char*>(key.data.scalar.value), key.data.scalar.length);
          const std::string child = path.empty() ? name : path + "." + name;
          if (out->contains(name)) return InvalidArgumentError(Line(key) + ": " + child + ": given twice");
          json value;
          STRATA_RETURN_IF_ERROR(Node(child, depth + 1, &value, lines));
          (*lines)[child] = int(key.start_mark.line) + 1;
          (*out)[name] = std::move(value);
        }
      }
      default: return InvalidArgumentError(where + ": unexpected YAML event");
    }
  }

  // The type of the next event without consuming it (libyaml has no peek:
  // one event is buffered for Next).
  yaml_event_type_t Peek() {
    if (!peeked_) {
      if (!yaml_parser_parse(&p_, &peek_)) return YAML_NO_EVENT;  // Next reports the error
      peeked_ = true;
    }
    return peek_.type;
  }
  Status Skip() {
    yaml_event_t ev;
    STRATA_RETURN_IF_ERROR(Next(&ev));
    yaml_event_delete(&ev);
    return Status::Ok();
  }

  yaml_parser_t p_;
  yaml_event_t peek_{};
  bool peeked_ = false;
};

}  // namespace

Result<YamlDocument> ParseYaml(std::string_view text) {
  if (text.size() > (64u << 20)) return InvalidArgumentError("the YAML file is over 64 MiB");
  Parser parser(text);
  return parser.Run();
}

std::string WithLine(const YamlDocument& yaml, const std::string& message) {
  // The longest field path the message starts with.
  const std::map<std::string, int>::value_type* best = nullptr;
  for (const auto& entry : yaml.lines) {
    const std::string& field = entry.first;
    if (message.size() > field.size() && message.compare(0, field.size(), field) == 0 &&
        (message[field.size()] == ':' || message[field.size()] == '.' || message[field.size()] == '[') &&
        (!best || field.size() > best->first.size()))
      best = &entry;
  }
  return best ? "line " + std::to_string(best->second) + ": " + message : message;
}

}  // namespace strata::plan
