// strata.Buffer: an immutable C++ Buffer exported to Python without copying.
// memoryview(buf), numpy.frombuffer(buf) and the arrays from NumpyView hold a
// reference to it, so the bytes live as long as any view does. Views are
// read-only: the bytes may be shared with a cache.
#include <pybind11/numpy.h>

#include <cstdint>

#include "bindings.h"

namespace strata::python {
namespace {
const uint8_t kEmpty[1] = {0};  // a valid pointer for empty views
}

py::object MemoryView(Buffer buffer) {
  py::object owner = py::cast(PyBuffer{std::move(buffer)});
  return py::reinterpret_steal<py::object>(PyMemoryView_FromObject(owner.ptr()));
}

py::object NumpyView(Buffer buffer, const std::string& dtype, const std::vector<int64_t>& shape, bool fortran_order) {
  py::dtype dt(dtype);
  const auto itemsize = static_cast<uint64_t>(dt.itemsize());
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) ThrowStatus(CorruptionError("negative dimension in array shape"));
    numel *= static_cast<uint64_t>(d);
  }
  if (numel * itemsize > buffer.size()) {
    ThrowStatus(CorruptionError("array of " + std::to_string(numel) + " x " + std::to_string(itemsize) +
                                " bytes does not fit its " + std::to_string(buffer.size()) + "-byte buffer"));
  }
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t step = static_cast<py::ssize_t>(itemsize);
  if (fortran_order) {
    for (size_t i = 0; i < dims.size(); ++i) strides[i] = step, step *= dims[i];
  } else {
    for (size_t i = dims.size(); i-- > 0;) strides[i] = step, step *= dims[i];
  }
  const void* ptr = buffer.empty() ? kEmpty : buffer.data();
  py::object base = py::cast(PyBuffer{std::move(buffer)});
  py::array arr(dt, dims, strides, ptr, base);
  arr.attr("flags").attr("writeable") = false;
  return arr;
}

void BindBuffer(py::module_& m) {
  py::class_<PyBuffer>(m, "Buffer", py::buffer_protocol(),
                       "Immutable bytes owned by strata (read-only buffer protocol, zero-copy).")
      .def_buffer([](PyBuffer& b) {
        const void* ptr = b.buffer.empty() ? kEmpty : b.buffer.data();
        return py::buffer_info(const_cast<void*>(ptr), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.buffer.size())}, {py::ssize_t{1}}, /*readonly=*/true);
      })
      .def("__len__", [](const PyBuffer& b) { return b.buffer.size(); })
      .def("__bytes__",
           [](const PyBuffer& b) { return py::bytes(reinterpret_cast<const char*>(b.buffer.data()), b.buffer.size()); })
      .def("__repr__",
           [](const PyBuffer& b) { return "<strata.Buffer " + std::to_string(b.buffer.size()) + " bytes>"; })
      .def_property_readonly(
          "address", [](const PyBuffer& b) { return reinterpret_cast<uintptr_t>(b.buffer.data()); },
          "Address of the first byte (for zero-copy checks).");
}

}  // namespace strata::python
