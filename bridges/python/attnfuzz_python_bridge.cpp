// SPDX-License-Identifier: BSD-3-Clause
// fuzz_attention --kernel-py FILE.py:FUNCTION: a plugin of the C ABI (version 2's functions, handed
// version 4's problem and tensors, and version 3's backward) that hosts CPython and calls a Python
// function for each case. Everything the harness does to a plugin (its probe in a child process,
// workers, poison and guard margins, the fences, inputs as evidence, properties, libFuzzer) applies
// unchanged; this file only starts the interpreter and hands the ABI's structs to bridge_glue.py
// (compiled in), which reads them with ctypes and makes the tensors.
//
// What to load comes from the environment, which fuzz_attention sets before it loads this plugin
// (its workers and probe inherit it): ATTNFUZZ_KERNEL_PY (the FILE.py:FUNCTION or MODULE:FUNCTION),
// ATTNFUZZ_PYTHON (the interpreter whose environment to use: a virtual environment's python
// works) and ATTNFUZZ_PY_FRAMEWORK (numpy, torch or jax). A function that cannot be loaded ends the
// process with exit 3 and one line naming it and the Python error: in the probe child, that line
// is fuzz_attention's error.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "attnfuzz/attnfuzz_plugin.h"
#include "python_bridge_glue.h"  // kBridgeGlueSource, generated from bridge_glue.py

namespace {

constexpr int kExitHarnessError = 3;  // core/exit_codes.h, which a plugin does not include

struct Bridge {
  PyObject* kernel = nullptr;  // bridge_glue.Kernel
  std::string name;
  int site = ATTNFUZZ_SITE_HOST;
  std::uint32_t features = 0;
};

const char* environment_or(const char* name, const char* otherwise) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : otherwise;
}

// The pending Python error as one line ("Type: message"), cleared.
std::string python_error_text() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  if (type == nullptr) return "unknown error";
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string text = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  if (PyObject* message = value != nullptr ? PyObject_Str(value) : nullptr) {
    if (const char* utf8 = PyUnicode_AsUTF8(message); utf8 != nullptr && *utf8 != '\0') {
      text += std::string(": ") + utf8;
    }
    Py_DECREF(message);
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

[[noreturn]] void fail_to_load(const std::string& why) {
  std::fprintf(stderr, "fuzz_attention: error: --kernel-py %s: %s\n",
               environment_or("ATTNFUZZ_KERNEL_PY", "(not set)"), why.c_str());
  std::fflush(stderr);
  std::_Exit(kExitHarnessError);
}

// Extension modules (numpy's, torch's) find the interpreter's symbols only when libpython is
// loaded globally; the harness opens plugins, and so this one and its libpython, locally.
void make_libpython_global() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &info) != 0 &&
      info.dli_fname != nullptr) {
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  }
}

void start_interpreter() {
  make_libpython_global();
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // the harness's own handlers stay
  config.parse_argv = 0;
  if (const char* python = std::getenv("ATTNFUZZ_PYTHON"); python != nullptr && *python != '\0') {
    // The interpreter's path decides sys.prefix: a virtual environment's site-packages.
    const PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, python);
    if (PyStatus_Exception(status)) fail_to_load("--python " + std::string(python) + ": unusable");
  }
  const PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    fail_to_load(std::string("cannot start Python: ") +
                 (status.err_msg != nullptr ? status.err_msg : "unknown error"));
  }
}

Bridge load() {
  Bridge bridge;
  start_interpreter();
  PyObject* glue = PyModule_New("attnfuzz_bridge_glue");
  PyObject* globals = PyModule_GetDict(glue);
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* ran = PyRun_String(kBridgeGlueSource, Py_file_input, globals, globals);
  if (ran == nullptr) {
    // Most likely the interpreter's standard library is another build's than the libpython here.
    Dl_info info{};
    const bool found = dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &info) != 0;
    fail_to_load(
        "the bridge's own code failed: " + python_error_text() + " (the bridge embeds Python " +
        std::string(Py_GetVersion()).substr(0, 6) +
        (found && info.dli_fname != nullptr ? " from " + std::string(info.dli_fname) : "") +
        ": --python must be that installation's interpreter, or a venv made from it)");
  }
  Py_DECREF(ran);
  const char* spec = std::getenv("ATTNFUZZ_KERNEL_PY");
  if (spec == nullptr || *spec == '\0') fail_to_load("ATTNFUZZ_KERNEL_PY is not set");
  PyObject* kernel = PyObject_CallMethod(glue, "load", "ss", spec,
                                         environment_or("ATTNFUZZ_PY_FRAMEWORK", "numpy"));
  if (kernel == nullptr) fail_to_load(python_error_text());
  bridge.kernel = kernel;
  const auto string_attribute = [&](const char* name) {
    PyObject* value = PyObject_GetAttrString(kernel, name);
    const char* utf8 = value != nullptr ? PyUnicode_AsUTF8(value) : nullptr;
    std::string text = utf8 != nullptr ? utf8 : "";
    Py_XDECREF(value);
    return text;
  };
  bridge.name = string_attribute("name");
  bridge.site =
      string_attribute("device") == "cuda" ? ATTNFUZZ_SITE_CUDA_DEVICE : ATTNFUZZ_SITE_HOST;
  PyObject* features = PyObject_GetAttrString(kernel, "features");
  bridge.features = features != nullptr ? static_cast<std::uint32_t>(PyLong_AsLong(features)) : 0;
  Py_XDECREF(features);
  PyErr_Clear();
  // Calls come from whichever thread the harness runs them on (the timer has its own).
  PyEval_SaveThread();
  return bridge;
}

Bridge& bridge() {
  static Bridge instance = load();
  return instance;
}

// Writes `text` into the ABI's reason or error buffer.
void write_message(const std::string& text, char* buffer, std::size_t size) {
  if (size == 0) return;
  std::snprintf(buffer, size, "%s", text.c_str());
}

// Calls method `name` of the kernel with the given addresses; its result as an optional text (None:
// nothing to say). A Python error in the bridge itself becomes the text.
bool call_with_addresses(const char* name, std::initializer_list<const void*> addresses,
                         std::string& text) {
  const PyGILState_STATE state = PyGILState_Ensure();
  PyObject* arguments = PyTuple_New(static_cast<Py_ssize_t>(addresses.size()));
  bool made = arguments != nullptr;
  Py_ssize_t index = 0;
  for (const void* address : addresses) {
    if (!made) break;
    PyObject* number = PyLong_FromUnsignedLongLong(
        static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(address)));
    made = number != nullptr;
    if (made) PyTuple_SET_ITEM(arguments, index++, number);  // steals the reference
  }
  PyObject* method = made ? PyObject_GetAttrString(bridge().kernel, name) : nullptr;
  PyObject* result = method != nullptr ? PyObject_Call(method, arguments, nullptr) : nullptr;
  Py_XDECREF(method);
  Py_XDECREF(arguments);
  bool said = false;
  if (result == nullptr) {
    text = "the Python bridge failed: " + python_error_text();
    said = true;
  } else if (result != Py_None) {
    const char* utf8 = PyUnicode_AsUTF8(result);
    text = utf8 != nullptr ? utf8 : "the Python bridge returned a message that is not text";
    PyErr_Clear();
    said = true;
  }
  Py_XDECREF(result);
  PyGILState_Release(state);
  return said;
}

}  // namespace

extern "C" {

int attnfuzz_plugin_abi_version(void) {
  return ATTNFUZZ_PLUGIN_ABI_VERSION;
}

const char* attnfuzz_plugin_name(void) {
  return bridge().name.c_str();
}

int attnfuzz_plugin_site(void) {
  return bridge().site;
}

uint32_t attnfuzz_plugin_features(void) {
  return bridge().features;
}

int attnfuzz_plugin_supports(const attnfuzz_problem*, char* reason, size_t reason_size) {
  write_message("version 2 only", reason, reason_size);
  return 0;
}

int attnfuzz_plugin_forward(const attnfuzz_problem*, const attnfuzz_tensors*, char* error,
                            size_t error_size) {
  write_message("version 2 only", error, error_size);
  return ATTNFUZZ_STATUS_ERROR;
}

int attnfuzz_plugin_supports_v2(const attnfuzz_problem_v2* problem, char* reason,
                                size_t reason_size) {
  std::string text;
  if (!call_with_addresses("supports", {problem}, text)) return 1;
  write_message(text, reason, reason_size);
  return 0;
}

int attnfuzz_plugin_forward_v2(const attnfuzz_problem_v2* problem,
                               const attnfuzz_tensors_v2* tensors, char* error, size_t error_size) {
  std::string text;
  if (!call_with_addresses("forward", {problem, tensors}, text)) return ATTNFUZZ_STATUS_OK;
  write_message(text, error, error_size);
  return ATTNFUZZ_STATUS_ERROR;
}

// Version 3: exported for every function; called only for one whose features declare a backward
// (attnfuzz_features "backward"), as the harness calls them only when the bit is set.
int attnfuzz_plugin_supports_backward(const attnfuzz_backward_problem* problem, char* reason,
                                      size_t reason_size) {
  std::string text;
  if (!call_with_addresses("supports_backward", {problem}, text)) return 1;
  write_message(text, reason, reason_size);
  return 0;
}

int attnfuzz_plugin_backward(const attnfuzz_backward_problem* problem,
                             const attnfuzz_tensors_v2* tensors,
                             const attnfuzz_backward_tensors* gradients, char* error,
                             size_t error_size) {
  std::string text;
  if (!call_with_addresses("backward", {problem, tensors, gradients}, text)) {
    return ATTNFUZZ_STATUS_OK;
  }
  write_message(text, error, error_size);
  return ATTNFUZZ_STATUS_ERROR;
}

}  // extern "C"
