// The weight guard's per-call check, native (runtime/native_guard.py builds and loads it).
//
// For each tensor a compiled module reads from its model: is it still the object in its owner's
// dict, does its Python object still hold the same TensorImpl (torch.utils.swap_tensors swaps
// them), is the storage, its data pointer and the tensor's offset into it the same (`.data = t`
// replaces them), and, if watched, its version counter (in-place updates)? The same questions the
// Python guard asks, each tensor's loads independent of the others', so the CPU overlaps their
// cache misses: in `irc bench`'s regime (every call after other programs' calls) the Python walk
// over MobileNet-v2's 152 tensors took about 100 us.
//
// Called through ctypes.PyDLL: the GIL is held (PyDict_GetItemWithError needs it), and the
// Python side keeps every object named here alive. Any exception answers "changed", so the
// caller runs its exact Python path.
#include <Python.h>
#include <c10/core/TensorImpl.h>

#include <cstdint>

struct irc_watch {
  PyObject* table;  // the owner's dict (NULL: no identity check)
  PyObject* key;
  PyObject* tensor;  // the torch.Tensor compiled against, or any object (`object`)
  int64_t object;  // 1: only `table[key] is tensor` is checked (a module's `training` flag)
  const c10::TensorImpl* impl;
  const c10::StorageImpl* storage;
  const void* data;
  int64_t offset;
  int64_t version;  // its version counter's value; -1: not watched
};

static inline const c10::TensorImpl* irc_impl_of(PyObject* tensor, int64_t at) {
  return *reinterpret_cast<const c10::TensorImpl* const*>(reinterpret_cast<const char*>(tensor) + at);
}

// The TensorImpl a torch.Tensor's Python object holds `at` bytes in (its `_cdata`), for the
// Python side to check that offset against `_cdata`.
extern "C" const void* irc_guard_impl(PyObject* tensor, int64_t at) { return irc_impl_of(tensor, at); }

// Read each tensor's state as it is now into its entry (version only where watched, >= 0).
// 0, or 1 if a tensor's state cannot be read (no storage, an inference tensor's version).
extern "C" int irc_guard_record(irc_watch* w, int64_t n, int64_t at) {
  try {
    for (int64_t i = 0; i < n; ++i) {
      if (w[i].object) continue;
      const c10::TensorImpl* impl = irc_impl_of(w[i].tensor, at);
      const c10::StorageImpl* storage = impl->unsafe_storage().unsafeGetStorageImpl();
      if (storage == nullptr) return 1;
      w[i].impl = impl;
      w[i].storage = storage;
      w[i].data = storage->data();
      w[i].offset = impl->storage_offset();
      if (w[i].version >= 0) {
        if (!impl->version_counter().enabled()) return 1;
        w[i].version = impl->version_counter().current_version();
      }
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

// Tensors checked together: each pass over them issues one level of their loads (objects, then
// TensorImpls and dict tables, then storages) as prefetches, so their misses overlap.
constexpr int64_t IRC_GUARD_BATCH = 32;

// 0 if every tensor is as recorded, else 1.
extern "C" int irc_guard_changed(const irc_watch* w, int64_t n, int64_t at) {
  try {
    const c10::TensorImpl* impls[IRC_GUARD_BATCH];
    for (int64_t base = 0; base < n; base += IRC_GUARD_BATCH) {
      const irc_watch* b = w + base;
      const int64_t m = n - base < IRC_GUARD_BATCH ? n - base : IRC_GUARD_BATCH;
      for (int64_t i = 0; i < m; ++i) {
        if (!b[i].object) __builtin_prefetch(reinterpret_cast<const char*>(b[i].tensor) + at);
        if (b[i].table != nullptr) {
          __builtin_prefetch(b[i].table);
          __builtin_prefetch(b[i].key);
        }
      }
      for (int64_t i = 0; i < m; ++i) {
        if (b[i].table != nullptr) __builtin_prefetch(reinterpret_cast<PyDictObject*>(b[i].table)->ma_keys);
        if (b[i].object) continue;
        impls[i] = irc_impl_of(b[i].tensor, at);
        __builtin_prefetch(&impls[i]->unsafe_storage());
        __builtin_prefetch(&impls[i]->version_counter());
      }
      for (int64_t i = 0; i < m; ++i) {
        if (b[i].object) continue;
        if (impls[i] != b[i].impl) return 1;
        __builtin_prefetch(impls[i]->unsafe_storage().unsafeGetStorageImpl());
      }
      for (int64_t i = 0; i < m; ++i) {
        const irc_watch& e = b[i];
        if (e.table != nullptr && PyDict_GetItemWithError(e.table, e.key) != e.tensor) {
          PyErr_Clear();
          return 1;
        }
        if (e.object) continue;
        const c10::TensorImpl* impl = impls[i];
        const c10::StorageImpl* storage = impl->unsafe_storage().unsafeGetStorageImpl();
        if (storage != e.storage || storage->data() != e.data || impl->storage_offset() != e.offset) return 1;
        if (e.version >= 0) {
          const c10::VariableVersion& v = impl->version_counter();
          if (!v.enabled() || static_cast<int64_t>(v.current_version()) != e.version) return 1;
        }
      }
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

// ---- The compiled module's whole call, native (native_guard.fast_call) ----------------------
//
// A `CompiledModule` call in Python is a few frames and three ctypes calls around the native
// code: the weight guard, the fold plan's check, the generated wrapper's input checks, output
// allocation and thread count (the cnn, hot, a null kernel in place of its own: 6.6 us a call).
// Here the same steps run in one C call of a builtin function, for one version on one thread
// (1.7 us). It answers None, having done nothing, wherever the Python path might do something
// else: grad mode or autocast on; an input that is not a plain dense contiguous CPU tensor of
// the compiled dtype and shape; another thread; a check that says "maybe" (weights, fold plan,
// submodules, hooks, tensors compared by value); any error. The Python path then takes the call.

#include <c10/core/GradMode.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

struct irc_fast {
  PyObject* tensor_type;  // torch.Tensor and torch.nn.Parameter: inputs of exactly these types
  PyObject* parameter_type;
  int64_t n_inputs;
  const int64_t* dims;  // [n_inputs]: each input's rank
  const int64_t* sizes;  // each input's sizes, one after the other
  const int64_t* dtypes;  // [n_inputs]: c10::ScalarType
  int64_t n_outputs;
  PyObject* const* outputs;  // [n_outputs * 3]: empty_strided's (shape, strides, dtype) per output
  PyObject* empty_strided;
  void** argv;  // the owning thread's pointer array (runtime/wrapper.py _per_thread_arrays)
  int64_t first_out;  // argv slot of output 0 (inputs: slots 0..n_inputs-1)
  int64_t thread_slot;  // argv slot holding the thread count this thread last set
  uint64_t owner;  // irc_thread_id() of the thread that made it
  void (*kernel)(void**);
  void (*set_threads)(int);  // NULL: the library has none
  PyObject* torch_threads;  // torch.get_num_threads
  PyObject* autocast;  // () -> bool: is any autocast on
  PyObject* thread_count;  // runtime/wrapper.py _thread_count(bytes) -> int
  const char* env;  // IRC_NUM_THREADS
  const irc_watch* guard;  // the weight guard's entries (NativeCheck)
  int64_t n_guard;
  const irc_watch* plan;  // the fold plan's (NULL: none)
  int64_t n_plan;
  PyObject* registrations;  // irc/weights.py _REGISTRATIONS, or NULL with modules
  PyObject* modules;  // its ModuleWatch (NULL: none)
  PyObject* handle_type;  // torch.utils.hooks.RemovableHandle, or NULL with hooks
  PyObject* hooks;  // its HookWatch (NULL: none)
  PyObject* const* values;  // [2 * n_values]: (live bytes, bytes compiled against), uint8, contiguous
  int64_t n_values;
  PyObject* epoch;  // "epoch"
  PyObject* next_id;  // "next_id"
  int64_t at;  // THPVARIABLE_IMPL
  int64_t return_tuple;
};

constexpr int64_t IRC_FAST_INPUTS = 64, IRC_FAST_OUTPUTS = 8;  // native_guard.py MAX_FAST_*

static std::atomic<uint64_t> irc_threads_seen{0};

// A number for the calling thread, never given to another thread (a thread's OS id is reused).
extern "C" uint64_t irc_thread_id() {
  static thread_local uint64_t id = ++irc_threads_seen;
  return id;
}

// The c10::ScalarType of a tensor (for the Python side to name a dtype by it).
extern "C" int64_t irc_scalar_type(PyObject* tensor, int64_t at) {
  return static_cast<int64_t>(irc_impl_of(tensor, at)->dtype().toScalarType());
}

// The dispatch keys of a plain dense CPU tensor, with or without autograd: any other key (a
// view with a negative or conjugate bit, sparse, quantized, a Python or functorch wrapper) is
// left to the Python path.
static constexpr c10::DispatchKeySet irc_plain_keys{
    c10::DispatchKey::CPU, c10::DispatchKey::ADInplaceOrView, c10::DispatchKey::AutogradCPU,
    c10::DispatchKey::AutocastCPU};

// a.name_a == b.name_b, both read now (false on any error).
static bool irc_same_attr(PyObject* a, PyObject* name_a, PyObject* b, PyObject* name_b) {
  PyObject* x = PyObject_GetAttr(a, name_a);
  if (x == nullptr) return false;
  PyObject* y = PyObject_GetAttr(b, name_b);
  if (y == nullptr) {
    Py_DECREF(x);
    return false;
  }
  const int same = PyObject_RichCompareBool(x, y, Py_EQ);
  Py_DECREF(x);
  Py_DECREF(y);
  return same == 1;
}

// The thread count the wrapper would use (runtime/wrapper.py _call_and_return: IRC_NUM_THREADS
// through `thread_count`, else torch.get_num_threads()), or 0 if unknown. A value of digits
// alone that gave its own number is remembered per thread (it can give no other).
static int64_t irc_fast_threads(const irc_fast* f) {
  static thread_local std::string seen;
  static thread_local int64_t seen_n = 0;
  const char* v = std::getenv(f->env);
  if (v != nullptr && seen_n > 0 && seen == v) return seen_n;
  PyObject* n;
  if (v != nullptr) {
    PyObject* value = PyBytes_FromString(v);
    if (value == nullptr) return 0;
    n = PyObject_CallOneArg(f->thread_count, value);
    Py_DECREF(value);
  } else {
    n = PyObject_CallNoArgs(f->torch_threads);
  }
  if (n == nullptr) return 0;
  const long long count = PyLong_AsLongLong(n);
  Py_DECREF(n);
  if (count <= 0 || count > (1 << 20)) return 0;
  if (v != nullptr) {  // remembered if it is the value's own number ("0" means torch's count)
    long long number = 0;
    bool digits = *v != '\0' && std::strlen(v) < 16;
    for (const char* p = v; digits && *p; ++p) {
      digits = *p >= '0' && *p <= '9';
      number = 10 * number + (*p - '0');
    }
    seen_n = digits && number == count ? count : 0;
    if (seen_n > 0) seen = v;
  }
  return count;
}

// Python's `registrations[0] != modules.epoch` (irc/weights.py WeightGuard.stale) is false.
static bool irc_same_epoch(PyObject* registrations, PyObject* watch, PyObject* epoch) {
  PyObject* recorded = PyObject_GetAttr(watch, epoch);
  if (recorded == nullptr) return false;
  const int same = PyObject_RichCompareBool(PyList_GET_ITEM(registrations, 0), recorded, Py_EQ);
  Py_DECREF(recorded);
  return same == 1;
}

static PyObject* irc_fast_miss() {
  if (PyErr_Occurred()) PyErr_Clear();
  Py_RETURN_NONE;
}

static PyObject* irc_fast_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  irc_fast* f = static_cast<irc_fast*>(PyLong_AsVoidPtr(PyTuple_GET_ITEM(self, 0)));
  if (f == nullptr || nargs != f->n_inputs || nargs > IRC_FAST_INPUTS || f->n_outputs > IRC_FAST_OUTPUTS ||
      irc_thread_id() != f->owner || c10::GradMode::is_enabled())
    return irc_fast_miss();
  // The pointers go into the array only after the last Python call below (one may run a
  // finalizer that calls this module on this thread, through the same array).
  const void* ins[IRC_FAST_INPUTS];
  PyObject* outs[IRC_FAST_OUTPUTS] = {};
  void* out_data[IRC_FAST_OUTPUTS];
  const int64_t n_out = f->n_outputs;
  try {
    const int64_t* sizes = f->sizes;
    for (int64_t i = 0; i < nargs; ++i) {
      PyObject* x = args[i];
      if (Py_TYPE(x) != reinterpret_cast<PyTypeObject*>(f->tensor_type) &&
          Py_TYPE(x) != reinterpret_cast<PyTypeObject*>(f->parameter_type))
        return irc_fast_miss();
      const c10::TensorImpl* impl = irc_impl_of(x, f->at);
      if ((impl->key_set().raw_repr() & ~irc_plain_keys.raw_repr()) != 0 || !impl->has_storage() ||
          impl->dtype().toScalarType() != static_cast<c10::ScalarType>(f->dtypes[i]) || impl->dim() != f->dims[i])
        return irc_fast_miss();
      const c10::IntArrayRef shape = impl->sizes();
      for (int64_t d = 0; d < f->dims[i]; ++d)
        if (shape[d] != sizes[d]) return irc_fast_miss();
      sizes += f->dims[i];
      if (!impl->is_contiguous()) return irc_fast_miss();
      ins[i] = impl->data();
    }
    PyObject* on = PyObject_CallNoArgs(f->autocast);
    if (on == nullptr) return irc_fast_miss();
    Py_DECREF(on);
    if (on != Py_False) return irc_fast_miss();
    if (irc_guard_changed(f->guard, f->n_guard, f->at) != 0) return irc_fast_miss();
    if (f->plan != nullptr && irc_guard_changed(f->plan, f->n_plan, f->at) != 0) return irc_fast_miss();
    if (f->modules != nullptr && !irc_same_epoch(f->registrations, f->modules, f->epoch)) return irc_fast_miss();
    if (f->hooks != nullptr && !irc_same_attr(f->hooks, f->epoch, f->handle_type, f->next_id))
      return irc_fast_miss();
    for (int64_t v = 0; v < f->n_values; ++v) {  // torch.equal of the two byte views
      const c10::TensorImpl* live = irc_impl_of(f->values[2 * v], f->at);
      const c10::TensorImpl* compiled = irc_impl_of(f->values[2 * v + 1], f->at);
      const int64_t n = live->numel();
      if (n != compiled->numel() || (n > 0 && std::memcmp(live->data(), compiled->data(), n) != 0))
        return irc_fast_miss();
    }
    const int64_t n = irc_fast_threads(f);
    if (n <= 0) return irc_fast_miss();
    for (int64_t j = 0; j < n_out; ++j) {
      outs[j] = PyObject_Vectorcall(f->empty_strided, f->outputs + 3 * j, 3, nullptr);
      if (outs[j] == nullptr) throw 0;
      c10::TensorImpl* impl = const_cast<c10::TensorImpl*>(irc_impl_of(outs[j], f->at));
      out_data[j] = impl->mutable_data();
    }
    for (int64_t i = 0; i < nargs; ++i) f->argv[i] = const_cast<void*>(ins[i]);
    for (int64_t j = 0; j < n_out; ++j) f->argv[f->first_out + j] = out_data[j];
    if (reinterpret_cast<intptr_t>(f->argv[f->thread_slot]) != n) {
      if (f->set_threads != nullptr) f->set_threads(static_cast<int>(n));
      f->argv[f->thread_slot] = reinterpret_cast<void*>(static_cast<intptr_t>(n));
    }
  } catch (...) {
    for (int64_t j = 0; j < n_out; ++j) Py_XDECREF(outs[j]);
    return irc_fast_miss();
  }
  PyThreadState* state = PyEval_SaveThread();  // as ctypes calls it: other Python threads run meanwhile
  f->kernel(f->argv);
  PyEval_RestoreThread(state);
  if (!f->return_tuple) return outs[0];
  PyObject* result = PyTuple_New(n_out);
  if (result == nullptr) {
    for (int64_t j = 0; j < n_out; ++j) Py_DECREF(outs[j]);
    return nullptr;
  }
  for (int64_t j = 0; j < n_out; ++j) PyTuple_SET_ITEM(result, j, outs[j]);
  return result;
}

static PyMethodDef irc_fast_def = {"irc_fast_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(irc_fast_call)),
                                   METH_FASTCALL, "A compiled module's call, native: its outputs, or None."};

// The builtin function for `f` (its `self`: (address of f, what keeps f's objects alive)).
extern "C" PyObject* irc_fast_function(PyObject* self) { return PyCFunction_New(&irc_fast_def, self); }
