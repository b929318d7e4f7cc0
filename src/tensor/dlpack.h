/* dlpack.h -- the DLPack ABI (v1.0), written from the specification
 * (dmlc/dlpack, "dlpack.h"; the Python protocol of the Array API standard),
 * private to src/tensor/. Only what numdyn exchanges is declared: the
 * layouts must match the specification byte for byte, since producers and
 * consumers in other libraries (torch, JAX, NumPy) read them.
 *
 * A capsule named "dltensor" holds a DLManagedTensor (legacy, pre-1.0);
 * "dltensor_versioned" holds a DLManagedTensorVersioned. A consumer renames
 * the capsule "used_dltensor" / "used_dltensor_versioned" when it takes
 * ownership, and then calls `deleter` when done; a capsule destroyed
 * unconsumed calls the deleter itself. */
#ifndef ND_DLPACK_H
#define ND_DLPACK_H
#include <stdint.h>

#define ND_DLPACK_MAJOR 1
#define ND_DLPACK_MINOR 0

enum {                       /* DLDeviceType (the ones numdyn names) */
    ND_DL_CPU = 1,
    ND_DL_CUDA = 2,
    ND_DL_CUDA_HOST = 3,     /* pinned host memory: readable from the CPU */
    ND_DL_ROCM = 10,
    ND_DL_CUDA_MANAGED = 13, /* unified memory: readable from the CPU */
};

enum {                       /* DLDataTypeCode */
    ND_DL_INT = 0,
    ND_DL_UINT = 1,
    ND_DL_FLOAT = 2,
    ND_DL_OPAQUE = 3,
    ND_DL_BFLOAT = 4,
    ND_DL_COMPLEX = 5,
    ND_DL_BOOL = 6,
};

typedef struct {
    int32_t device_type;     /* a C enum in the specification: int-sized */
    int32_t device_id;
} nd_DLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} nd_DLDataType;

typedef struct {
    void *data;
    nd_DLDevice device;
    int32_t ndim;
    nd_DLDataType dtype;
    int64_t *shape;
    int64_t *strides;        /* in elements; NULL: C-contiguous */
    uint64_t byte_offset;
} nd_DLTensor;

typedef struct nd_DLManagedTensor {
    nd_DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct nd_DLManagedTensor *self);
} nd_DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} nd_DLPackVersion;

#define ND_DLPACK_FLAG_READ_ONLY (1ULL << 0)
#define ND_DLPACK_FLAG_IS_COPIED (1ULL << 1)

typedef struct nd_DLManagedTensorVersioned {
    nd_DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct nd_DLManagedTensorVersioned *self);
    uint64_t flags;
    nd_DLTensor dl_tensor;
} nd_DLManagedTensorVersioned;

#endif
