#include "src/attribution/kubernetes/kube_objects.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

using Json = nlohmann::json;

// Deeper nesting than any Kubernetes object has; refused before parsing, so that hostile input cannot
// make the parser or the destructor of the tree recurse without bound.
constexpr int kMaxDepth = 64;

// The deepest nesting of arrays and objects in `text`, outside strings (a cheap scan, no parse).
int NestingDepth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

// Parses `text` into *out; InvalidArgument naming `what` when it is not JSON or nests too deep.
Status ParseJson(std::string_view text, std::string_view what, Json* out) {
  if (NestingDepth(text) > kMaxDepth) {
    return Status::InvalidArgument(std::string(what) + ": nested deeper than " + std::to_string(kMaxDepth));
  }
  // No exceptions: a parse error gives a discarded value.
  *out = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) return Status::InvalidArgument(std::string(what) + ": not JSON");
  if (!out->is_object()) return Status::InvalidArgument(std::string(what) + ": not a JSON object");
  return Status::Ok();
}

// The string member `key` of `object`; "" when absent or null; false when present with another type.
bool StringMember(const Json& object, const char* key, std::string* out) {
  out->clear();
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

Status ParseMeta(const Json& object, std::string_view what, KubeObjectMeta* meta) {
  *meta = KubeObjectMeta();
  auto it = object.find("metadata");
  if (it == object.end() || !it->is_object())
    return Status::InvalidArgument(std::string(what) + ": no metadata");
  const Json& m = *it;
  if (!StringMember(m, "name", &meta->name) || !StringMember(m, "namespace", &meta->namespace_name) ||
      !StringMember(m, "uid", &meta->uid)) {
    return Status::InvalidArgument(std::string(what) + ": metadata.name, .namespace or .uid is not a string");
  }
  if (meta->name.empty() || meta->namespace_name.empty()) {
    return Status::InvalidArgument(std::string(what) + ": metadata.name or .namespace missing");
  }
  if (auto labels = m.find("labels"); labels != m.end() && !labels->is_null()) {
    if (!labels->is_object())
      return Status::InvalidArgument(std::string(what) + ": metadata.labels is not an object");
    for (const auto& [name, value] : labels->items()) {
      if (!value.is_string()) {
        return Status::InvalidArgument(std::string(what) + ": label " + name + " is not a string");
      }
      meta->labels.emplace_back(name, value.get<std::string>());
    }
    std::sort(meta->labels.begin(), meta->labels.end());
  }
  if (auto owners = m.find("ownerReferences"); owners != m.end() && !owners->is_null()) {
    if (!owners->is_array()) {
      return Status::InvalidArgument(std::string(what) + ": metadata.ownerReferences is not an array");
    }
    for (const Json& owner : *owners) {
      KubeOwnerReference ref;
      if (!owner.is_object() || !StringMember(owner, "kind", &ref.kind) ||
          !StringMember(owner, "name", &ref.name) || ref.kind.empty() || ref.name.empty()) {
        return Status::InvalidArgument(std::string(what) + ": an owner reference without kind or name");
      }
      auto controller = owner.find("controller");
      ref.controller = controller != owner.end() && controller->is_boolean() && controller->get<bool>();
      meta->owners.push_back(std::move(ref));
    }
  }
  return Status::Ok();
}

// The object's kind must be `kind` when the body names one.
Status CheckKind(const Json& object, std::string_view what, std::string_view kind) {
  std::string actual;
  if (!StringMember(object, "kind", &actual))
    return Status::InvalidArgument(std::string(what) + ": kind is not a string");
  if (!actual.empty() && actual != kind) {
    return Status::InvalidArgument(std::string(what) + ": kind " + actual + ", expected " +
                                   std::string(kind));
  }
  return Status::Ok();
}

Status PodFromJson(const Json& object, std::string_view what, KubePod* pod) {
  *pod = KubePod();
  if (!object.is_object()) return Status::InvalidArgument(std::string(what) + ": not an object");
  if (Status kind = CheckKind(object, what, "Pod"); !kind.ok()) return kind;
  if (Status meta = ParseMeta(object, what, &pod->meta); !meta.ok()) return meta;
  if (auto spec = object.find("spec"); spec != object.end() && spec->is_object()) {
    if (!StringMember(*spec, "nodeName", &pod->node_name)) {
      return Status::InvalidArgument(std::string(what) + ": spec.nodeName is not a string");
    }
  }
  return Status::Ok();
}

}  // namespace

const KubeOwnerReference* KubeObjectMeta::Controller() const {
  for (const KubeOwnerReference& owner : owners) {
    if (owner.controller) return &owner;
  }
  return owners.empty() ? nullptr : &owners.front();
}

Status ParseKubePod(std::string_view json, KubePod* pod) {
  Json object;
  if (Status parsed = ParseJson(json, "pod", &object); !parsed.ok()) return parsed;
  return PodFromJson(object, "pod", pod);
}

Status ParseKubePodList(std::string_view json, std::vector<KubePod>* pods) {
  pods->clear();
  Json object;
  if (Status parsed = ParseJson(json, "pod list", &object); !parsed.ok()) return parsed;
  if (Status kind = CheckKind(object, "pod list", "PodList"); !kind.ok()) return kind;
  auto items = object.find("items");
  if (items == object.end() || items->is_null()) return Status::Ok();  // an empty list may omit it
  if (!items->is_array()) return Status::InvalidArgument("pod list: items is not an array");
  std::vector<KubePod> out;
  out.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    KubePod pod;
    if (Status status = PodFromJson((*items)[i], "pod list: items[" + std::to_string(i) + "]", &pod);
        !status.ok())
      return status;
    out.push_back(std::move(pod));
  }
  *pods = std::move(out);
  return Status::Ok();
}

Status ParseKubeObjectMeta(std::string_view json, std::string_view kind, KubeObjectMeta* meta) {
  *meta = KubeObjectMeta();
  const std::string what(kind);
  Json object;
  if (Status parsed = ParseJson(json, what, &object); !parsed.ok()) return parsed;
  if (Status checked = CheckKind(object, what, kind); !checked.ok()) return checked;
  return ParseMeta(object, what, meta);
}

KubeStatus ParseKubeStatus(std::string_view json) {
  KubeStatus status;
  Json object;
  if (!ParseJson(json, "status", &object).ok()) return status;
  std::string kind;
  if (!StringMember(object, "kind", &kind) || kind != "Status") return status;
  if (auto code = object.find("code"); code != object.end() && code->is_number_integer()) {
    status.code = code->get<int>();
  }
  (void)StringMember(object, "reason", &status.reason);
  (void)StringMember(object, "message", &status.message);
  if (auto details = object.find("details"); details != object.end() && details->is_object()) {
    auto retry = details->find("retryAfterSeconds");
    if (retry != details->end() && retry->is_number_integer()) {
      status.retry_after_seconds = std::clamp<int64_t>(retry->get<int64_t>(), 0, 86400);
    }
  }
  return status;
}

std::string PodLabelMetricName(std::string_view label) {
  std::string out = "label_";
  for (char c : label) {
    // One '_' per character, as Go's regexp replaces runes: a UTF-8 continuation byte adds none.
    if ((static_cast<unsigned char>(c) & 0xC0) == 0x80) continue;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out.push_back(ok ? c : '_');
  }
  return out;
}

}  // namespace gpuscope
