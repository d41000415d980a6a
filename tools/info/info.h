/* hetccl-info's sections, one per file; each prints to stdout (hetccl-validate
 * prints them too). */
#ifndef HETCCL_INFO_H
#define HETCCL_INFO_H

void info_version(void);
void info_devices(void);
void info_vendor_libraries(void);
void info_transports(void);
void info_ofi(void);
void info_kernels(void);
void info_settings(void);
void info_topology(void);

#endif
