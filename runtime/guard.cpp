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
