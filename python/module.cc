// The _strata extension module: exception hierarchy, Status translation, and
// the registration of every binding. The Python package `strata` (python/strata/)
// wraps it; users import `strata`, not `_strata`.
#include <map>
#include <string>
#include <vector>

#include "bindings.h"

namespace strata::python {
namespace {

struct ExceptionSpec {
  Code code;
  const char* name;
  std::vector<const char*> bases;  // besides strata.Error (or a strata class named here)
  const char* doc;
};

// strata.Error subclasses also derive from the builtin a Python user would catch.
const std::vector<ExceptionSpec>& Specs() {
  static const std::vector<ExceptionSpec> specs = {
      {Code::kNotFound, "NotFound", {"FileNotFoundError"}, "No such object, key, file or checkpoint."},
      {Code::kInvalidArgument, "InvalidArgument", {"ValueError"}, "The caller's input is malformed."},
      {Code::kOutOfRange, "OutOfRange", {"InvalidArgument"}, "A byte range outside the object."},
      {Code::kCorruption, "Corruption", {}, "Data failed a checksum or structural check."},
      {Code::kIOError, "IOFailure", {"OSError"}, "Local I/O failed."},
      {Code::kNoSpace, "NoSpace", {"OSError"}, "The local disk or a quota is full."},
      {Code::kPreconditionFailed, "PreconditionFailed", {}, "An ETag condition did not hold."},
      {Code::kNotModified, "NotModified", {}, "A conditional read matched (HTTP 304)."},
      {Code::kUnavailable, "Unavailable", {"ConnectionError"}, "Transient failure: a retry may help."},
      {Code::kThrottled, "Throttled", {"Unavailable"}, "The server asked to slow down."},
      {Code::kDeadlineExceeded, "DeadlineExceeded", {"TimeoutError"}, "An operation timed out."},
      {Code::kNotSupported, "NotSupported", {"NotImplementedError"}, "Not supported by this backend."},
      {Code::kPermissionDenied, "PermissionDenied", {"PermissionError"}, "Authenticated but not allowed."},
      {Code::kUnauthenticated, "Unauthenticated", {"PermissionError"}, "Credentials missing or wrong."},
      {Code::kAlreadyExists, "AlreadyExists", {"FileExistsError"}, "The name exists already."},
      {Code::kCancelled, "Cancelled", {}, "The operation was cancelled."},
      {Code::kInternal, "InternalError", {}, "A bug in strata: an invariant did not hold."},
  };
  return specs;
}

std::map<Code, PyObject*>& Classes() {
  static auto* classes = new std::map<Code, PyObject*>();  // leaked: lives as long as the interpreter
  return *classes;
}
PyObject* g_error = nullptr;

void RegisterExceptions(py::module_& m) {
  g_error = PyErr_NewExceptionWithDoc("strata.Error", "Base of every strata error; .code names the Status code.",
                                      PyExc_Exception, nullptr);
  m.add_object("Error", py::handle(g_error));
  py::module_ builtins = py::module_::import("builtins");
  for (const auto& spec : Specs()) {
    std::vector<py::object> bases;
    bool strata_base = false;
    for (const char* b : spec.bases) strata_base |= py::hasattr(m, b);
    if (!strata_base) bases.push_back(py::reinterpret_borrow<py::object>(g_error));
    for (const char* b : spec.bases) bases.push_back(py::hasattr(m, b) ? m.attr(b) : builtins.attr(b));
    py::tuple base_tuple(bases.size());
    for (size_t i = 0; i < bases.size(); ++i) base_tuple[i] = bases[i];
    std::string qualified = std::string("strata.") + spec.name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), spec.doc, base_tuple.ptr(), nullptr);
    if (cls == nullptr) throw py::error_already_set();
    m.add_object(spec.name, py::handle(cls));
    Classes()[spec.code] = cls;
  }
}

void RaiseStatus(const Status& status) {
  PyObject* cls = g_error;
  if (auto it = Classes().find(status.code()); it != Classes().end()) cls = it->second;
  std::string text = status.message();
  if (!status.foreign_code().empty()) text += " [" + status.foreign_code() + "]";
  if (!status.cause().empty()) text += " (cause: " + status.cause() + ")";
  py::object exc = py::reinterpret_borrow<py::object>(cls)(text);
  exc.attr("code") = std::string(CodeName(status.code()));
  exc.attr("retryable") = status.retryable();
  PyErr_SetObject(cls, exc.ptr());
}

}  // namespace
}  // namespace strata::python

PYBIND11_MODULE(_strata, m) {
  namespace sp = strata::python;
  m.doc() = "strata: object stores, streaming datasets and checkpoints (C++ core)";
  sp::RegisterExceptions(m);
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const sp::StatusError& e) {
      sp::RaiseStatus(e.status);
    }
  });
  sp::BindBuffer(m);
  sp::BindStore(m);
  sp::BindDataset(m);
  sp::BindCkpt(m);
  sp::BindLoader(m);
}
