# Finds libvirt through pkg-config (Debian's libvirt-dev ships no CMake package).
# Provides the imported target Libvirt::Libvirt.
find_package(PkgConfig REQUIRED)
pkg_check_modules(PC_LIBVIRT QUIET libvirt)
find_path(LIBVIRT_INCLUDE_DIR libvirt/libvirt.h HINTS ${PC_LIBVIRT_INCLUDE_DIRS})
find_library(LIBVIRT_LIBRARY NAMES virt HINTS ${PC_LIBVIRT_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Libvirt REQUIRED_VARS LIBVIRT_LIBRARY LIBVIRT_INCLUDE_DIR
  VERSION_VAR PC_LIBVIRT_VERSION)
if(Libvirt_FOUND AND NOT TARGET Libvirt::Libvirt)
  add_library(Libvirt::Libvirt UNKNOWN IMPORTED)
  set_target_properties(Libvirt::Libvirt PROPERTIES
    IMPORTED_LOCATION "${LIBVIRT_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LIBVIRT_INCLUDE_DIR}")
endif()
mark_as_advanced(LIBVIRT_INCLUDE_DIR LIBVIRT_LIBRARY)
