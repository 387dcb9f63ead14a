// lutkit — closes the region intrinsics_begin.hpp opened: the warnings as the includer had them.
// No include guard on purpose.
#pragma GCC diagnostic pop
