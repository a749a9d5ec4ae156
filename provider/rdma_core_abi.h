#pragma once

// The part of libibverbs' provider interface this provider uses, declared here because rdma-core
// does not install its driver header. It is a private ABI: libibverbs exports it under the symbol
// version IBVERBS_PRIVATE_<N> and only loads providers built for the same N, so the layouts
// below are those of the ABI Debian 12's rdma-core 44 exports (IBVERBS_PRIVATE_34). A provider
// built against a different N is refused by the dynamic linker, never misread.

#include <infiniband/verbs.h>
#include <sys/types.h>
#include <time.h>

#include <cstddef>
#include <cstdint>

#define ERNIC_IBVERBS_PABI_VERSION 34

extern "C" {

struct list_node {
  struct list_node* next;
  struct list_node* prev;
};

struct verbs_match_ent {
  void* driver_data;
  union {
    const char* modalias;
    uint64_t driver_id;
  } u;
  uint16_t vendor;
  uint16_t device;
  uint8_t kind;
};

// What libibverbs read from <sysfs>/class/infiniband_verbs/<uverbs> and the IB device's folder.
struct verbs_sysfs_dev {
  struct list_node entry;
  void* provider_data;
  const struct verbs_match_ent* match;
  unsigned int flags;
  char sysfs_name[IBV_SYSFS_NAME_MAX];
  dev_t sysfs_cdev;
  char ibdev_name[IBV_SYSFS_NAME_MAX];
  char ibdev_path[IBV_SYSFS_PATH_MAX];
  char modalias[512];
  uint64_t node_guid;
  uint32_t driver_id;
  enum ibv_node_type node_type;
  int ibdev_idx;
  uint32_t num_ports;
  uint32_t abi_ver;
  struct timespec time_created;
};

struct verbs_device;
struct verbs_context;

struct verbs_device_ops {
  const char* name;
  uint32_t match_min_abi_version;
  uint32_t match_max_abi_version;
  const struct verbs_match_ent* match_table;
  const struct verbs_device_ops** static_providers;
  bool (*match_device)(struct verbs_sysfs_dev* sysfs_dev);
  struct verbs_context* (*alloc_context)(struct ibv_device* device, int cmd_fd, void* private_data);
  struct verbs_context* (*import_context)(struct ibv_device* device, int cmd_fd);
  struct verbs_device* (*alloc_device)(struct verbs_sysfs_dev* sysfs_dev);
  void (*uninit_device)(struct verbs_device* device);
};

struct verbs_device {
  struct ibv_device device;  // first: libibverbs converts between the two by address
  const struct verbs_device_ops* ops;
  int refcount;  // an atomic_int in libibverbs: the same size and alignment as int
  struct list_node entry;
  struct verbs_sysfs_dev* sysfs;
  uint64_t core_support;
};

enum ibv_mr_type {
  IBV_MR_TYPE_MR,
  IBV_MR_TYPE_NULL_MR,
  IBV_MR_TYPE_IMPORTED_MR,
  IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
  struct ibv_mr ibv_mr;
  enum ibv_mr_type mr_type;
  int access;
};

enum { kVerbsQpExtended = 1 << 1 };  // verbs_qp::comp_mask: ibv_qp_to_qp_ex() answers

struct verbs_xrcd;
struct verbs_qp {
  union {
    struct ibv_qp qp;
    struct ibv_qp_ex qp_ex;
  };
  uint32_t comp_mask;
  struct verbs_xrcd* xrcd;
};

struct verbs_cq {
  union {
    struct ibv_cq cq;
    struct ibv_cq_ex cq_ex;
  };
};

// Every operation a provider can implement, in libibverbs' (alphabetical) order. An operation
// left null answers EOPNOTSUPP through libibverbs' own defaults.
struct verbs_context_ops {
  void* advise_mr;
  void* alloc_dm;
  void* alloc_mw;
  void* alloc_null_mr;
  void* alloc_parent_domain;
  struct ibv_pd* (*alloc_pd)(struct ibv_context* context);
  void* alloc_td;
  void (*async_event)(struct ibv_context* context, struct ibv_async_event* event);
  void* attach_counters_point_flow;
  void* attach_mcast;
  void* bind_mw;
  void* close_xrcd;
  void (*cq_event)(struct ibv_cq* cq);
  void* create_ah;
  void* create_counters;
  struct ibv_cq* (*create_cq)(struct ibv_context* context, int cqe,
                              struct ibv_comp_channel* channel, int comp_vector);
  void* create_cq_ex;
  void* create_flow;
  void* create_flow_action_esp;
  struct ibv_qp* (*create_qp)(struct ibv_pd* pd, struct ibv_qp_init_attr* attr);
  struct ibv_qp* (*create_qp_ex)(struct ibv_context* context,
                                 struct ibv_qp_init_attr_ex* qp_init_attr_ex);
  void* create_rwq_ind_table;
  void* create_srq;
  void* create_srq_ex;
  void* create_wq;
  void* dealloc_mw;
  int (*dealloc_pd)(struct ibv_pd* pd);
  void* dealloc_td;
  int (*dereg_mr)(struct verbs_mr* vmr);
  void* destroy_ah;
  void* destroy_counters;
  int (*destroy_cq)(struct ibv_cq* cq);
  void* destroy_flow;
  void* destroy_flow_action;
  int (*destroy_qp)(struct ibv_qp* qp);
  void* destroy_rwq_ind_table;
  void* destroy_srq;
  void* destroy_wq;
  void* detach_mcast;
  void (*free_context)(struct ibv_context* context);
  void* free_dm;
  void* get_srq_num;
  void* import_dm;
  void* import_mr;
  void* import_pd;
  void* modify_cq;
  void* modify_flow_action_esp;
  int (*modify_qp)(struct ibv_qp* qp, struct ibv_qp_attr* attr, int attr_mask);
  void* modify_qp_rate_limit;
  void* modify_srq;
  void* modify_wq;
  void* open_qp;
  void* open_xrcd;
  int (*poll_cq)(struct ibv_cq* cq, int num_entries, struct ibv_wc* wc);
  int (*post_recv)(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad_wr);
  int (*post_send)(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad_wr);
  void* post_srq_ops;
  void* post_srq_recv;
  int (*query_device_ex)(struct ibv_context* context, const struct ibv_query_device_ex_input* input,
                         struct ibv_device_attr_ex* attr, size_t attr_size);
  void* query_ece;
  int (*query_port)(struct ibv_context* context, uint8_t port_num, struct ibv_port_attr* port_attr);
  int (*query_qp)(struct ibv_qp* qp, struct ibv_qp_attr* attr, int attr_mask,
                  struct ibv_qp_init_attr* init_attr);
  void* query_qp_data_in_order;
  void* query_rt_values;
  void* query_srq;
  void* read_counters;
  void* reg_dm_mr;
  void* reg_dmabuf_mr;
  struct ibv_mr* (*reg_mr)(struct ibv_pd* pd, void* addr, size_t length, uint64_t hca_va,
                           int access);
  int (*req_notify_cq)(struct ibv_cq* cq, int solicited_only);
  void* rereg_mr;
  void* resize_cq;
  void* set_ece;
  void* unimport_dm;
  void* unimport_mr;
  void* unimport_pd;
};

// Exported by libibverbs.so.1 under IBVERBS_PRIVATE_34.
void verbs_register_driver_34(const struct verbs_device_ops* ops);
void* _verbs_init_and_alloc_context(struct ibv_device* device, int cmd_fd, size_t alloc_size,
                                    struct verbs_context* context_offset, uint32_t driver_id);
void verbs_uninit_context(struct verbs_context* context);
void verbs_set_ops(struct verbs_context* vctx, const struct verbs_context_ops* ops);
int ibv_read_ibdev_sysfs_file(char* buf, size_t size, struct verbs_sysfs_dev* sysfs_dev,
                              const char* fnfmt, ...);
}

static_assert(offsetof(verbs_context_ops, alloc_pd) == 5 * sizeof(void*));
static_assert(offsetof(verbs_context_ops, unimport_pd) == 75 * sizeof(void*),
              "verbs_context_ops must have rdma-core 44's 76 operations");
