/* The OpenCL types clattn's public headers name, as opaque handles, for
 * cffi's parser (python/meson.build): the bindings pass them as integers
 * taken from PyOpenCL's objects and never look inside. */
typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_event *cl_event;
