// Shared pieces of the `strata` Python extension (module _strata).
//
// Each python/bind_<name>.cc defines one Bind<Name>(module) declared here and
// called from module.cc. Errors cross into Python only through ThrowStatus:
// a Status becomes the strata.<Code> exception (subclassing strata.Error and
// the matching builtin, e.g. NotFound -> FileNotFoundError) with its message.
// Every blocking C++ call runs with the GIL released.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"

namespace strata::python {

namespace py = pybind11;

// Carries a non-OK Status to the exception translator registered in module.cc.
struct StatusError {
  Status status;
};

[[noreturn]] inline void ThrowStatus(const Status& status) { throw StatusError{status}; }

inline void Check(const Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

template <typename T>
T Unwrap(Result<T>&& result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(result).value();
}

// A Python object owning a strata::Buffer and exporting it read-only through
// the buffer protocol, so memoryview/numpy views keep the bytes alive.
struct PyBuffer {
  Buffer buffer;
};

// A read-only memoryview over `buffer` (its .obj is a strata.Buffer).
py::object MemoryView(Buffer buffer);
// A read-only numpy array over `buffer` (no copy); `base` is a strata.Buffer.
// `dtype` is a numpy type string ("<f4", "|u1", ...); Fortran order sets column-major strides.
py::object NumpyView(Buffer buffer, const std::string& dtype, const std::vector<int64_t>& shape,
                     bool fortran_order = false);

void BindBuffer(py::module_& m);
void BindStore(py::module_& m);
void BindDataset(py::module_& m);
void BindCkpt(py::module_& m);
void BindLoader(py::module_& m);

}  // namespace strata::python
