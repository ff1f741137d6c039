// Emitted only for a function with size arguments (lowering/cpp/emit_cpp.py). Its scratch arena:
// one per calling thread, grown (never shrunk) to the bytes this call needs, 64-byte aligned,
// freed when the thread ends. The arenas of functions without sizes are the caller's
// (runtime/wrapper.py).
struct irc_arena_slot {
  float* data = nullptr;
  int64_t bytes = 0;
  ~irc_arena_slot() { std::free(data); }
};

[[maybe_unused]] static float* irc_thread_arena(int64_t bytes) {
  static thread_local irc_arena_slot slot;
  if (bytes > slot.bytes) {
    const int64_t grown = (bytes + bytes / 2 + 63) / 64 * 64;  // room for a few longer calls
    std::free(slot.data);
    slot.data = static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>(grown)));
    slot.bytes = slot.data ? grown : 0;
  }
  return slot.data;
}
