// Modules, libraries, functions and kernels. A fake "image" is NUL-terminated text with one line
// per kernel:
//     kernel <mangled_name> <duration_ns> [regs=<n>] [smem=<bytes>]
// A duration of `inf` never ends within a test (10^18 ns, some 31 years): a hung kernel.
// Blank lines and `#` comments are ignored; anything else makes the load fail with
// CUDA_ERROR_INVALID_IMAGE. A kernel whose name contains "__fail_launch" refuses every launch.
// A library (cuLibraryLoadData) owns one module, and one CUkernel per function of it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "test/fake_cuda/fake_internal.h"

namespace {

using fake::Lock;

constexpr int kMaxSharedPerBlockOptin = 232448;

bool parseUnsigned(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

bool parseOption(const std::string& token, CUfunc_st* f) {
  size_t eq = token.find('=');
  uint64_t value = 0;
  if (eq == std::string::npos || !parseUnsigned(token.substr(eq + 1), &value)) return false;
  std::string key = token.substr(0, eq);
  if (value > kMaxSharedPerBlockOptin) return false;
  if (key == "regs") {
    f->numRegs = static_cast<int>(value);
  } else if (key == "smem") {
    f->sharedBytes = static_cast<int>(value);
  } else {
    return false;
  }
  return true;
}

// Moves `*pos` past the next whitespace-separated token of `line`, stored in `*out`.
bool nextToken(const std::string& line, size_t* pos, std::string* out) {
  size_t begin = line.find_first_not_of(" \t\r", *pos);
  if (begin == std::string::npos) return false;
  size_t end = line.find_first_of(" \t\r", begin);
  if (end == std::string::npos) end = line.size();
  *out = line.substr(begin, end - begin);
  *pos = end;
  return true;
}

// Parses one line (comment already removed) into a function; false if malformed.
bool parseKernelLine(const std::string& line, CUfunc_st* f) {
  size_t pos = 0;
  std::string keyword, duration, option;
  if (!nextToken(line, &pos, &keyword) || keyword != "kernel") return false;
  if (!nextToken(line, &pos, &f->name) || !nextToken(line, &pos, &duration)) return false;
  if (duration == "inf") f->durationNs = 1000000000000000000ull;
  else if (!parseUnsigned(duration, &f->durationNs)) return false;
  while (nextToken(line, &pos, &option)) {
    if (!parseOption(option, f)) return false;
  }
  f->failLaunch = f->name.find("__fail_launch") != std::string::npos;
  return true;
}

CUresult parseImage(const void* image, std::vector<std::unique_ptr<CUfunc_st>>* out) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const char* text = static_cast<const char*>(image);
  while (*text != '\0') {
    const char* newline = std::strchr(text, '\n');
    size_t length = newline != nullptr ? static_cast<size_t>(newline - text) : std::strlen(text);
    std::string line(text, length);
    text += newline != nullptr ? length + 1 : length;
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto f = std::make_unique<CUfunc_st>();
    if (!parseKernelLine(line, f.get())) return CUDA_ERROR_INVALID_IMAGE;
    for (const auto& other : *out) {
      if (other->name == f->name) return CUDA_ERROR_INVALID_IMAGE;
    }
    out->push_back(std::move(f));
  }
  return CUDA_SUCCESS;
}

bool readFile(const char* path, std::string* out) {
  if (path == nullptr) return false;
  FILE* file = std::fopen(path, "rb");
  if (file == nullptr) return false;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) out->append(buffer, n);
  std::fclose(file);
  return true;
}

// Parses the image and registers a module with its functions (lock held).
CUresult makeModule(const void* image, CUmod_st** out) {
  std::vector<std::unique_ptr<CUfunc_st>> functions;
  if (CUresult r = parseImage(image, &functions)) return r;
  CUmod_st* module = new CUmod_st;
  module->functions = std::move(functions);
  fake::registerHandle(module, fake::Kind::kModule);
  for (auto& f : module->functions) {
    f->module = module;
    fake::registerHandle(f.get(), fake::Kind::kFunction);
  }
  *out = module;
  return CUDA_SUCCESS;
}

void deleteModule(CUmod_st* module) {
  for (auto& f : module->functions) fake::unregisterHandle(f.get());
  fake::unregisterHandle(module);
  delete module;
}

CUresult loadModule(CUmodule* out, const void* image) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUctx_st* ctx = nullptr;
  if (CUresult r = fake::requireContext(&ctx)) return r;
  return makeModule(image, out);
}

CUresult loadLibrary(CUlibrary* out, const void* image) {
  if (CUresult r = fake::checkInit()) return r;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Lock lock = fake::lockState();
  CUmod_st* module = nullptr;
  if (CUresult r = makeModule(image, &module)) return r;
  CUlib_st* library = new CUlib_st;
  library->module = module;
  module->library = library;
  fake::registerHandle(library, fake::Kind::kLibrary);
  for (auto& f : module->functions) {
    auto kernel = std::make_unique<CUkern_st>();
    kernel->library = library;
    kernel->function = f.get();
    fake::registerHandle(kernel.get(), fake::Kind::kKernel);
    library->kernels.push_back(std::move(kernel));
  }
  *out = library;
  return CUDA_SUCCESS;
}

int maxThreadsPerBlock(const CUfunc_st* f) {
  int byRegisters = 65536 / std::max(f->numRegs, 1) / 32 * 32;
  return std::max(32, std::min(1024, byRegisters));
}

CUresult functionAttribute(const CUfunc_st* f, CUfunction_attribute attrib, int* pi) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = maxThreadsPerBlock(f); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = f->sharedBytes; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = f->numRegs; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->maxDynamicSharedBytes; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult setFunctionAttribute(CUfunc_st* f, CUfunction_attribute attrib, int value) {
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value + f->sharedBytes > kMaxSharedPerBlockOptin) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      f->maxDynamicSharedBytes = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: return CUDA_SUCCESS;  // ignored
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// Runs body(function) under the lock for a CUfunction (or CUkernel cast to one).
template <class Body>
CUresult withFunction(const void* handle, Body body) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  CUfunc_st* f = fake::resolveFunction(handle);
  return f != nullptr ? body(f) : CUDA_ERROR_INVALID_HANDLE;
}

template <class Body>
CUresult withKernel(CUkernel handle, Body body) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  CUkern_st* kernel = fake::lookup<CUkern_st>(handle);
  return kernel != nullptr ? body(kernel) : CUDA_ERROR_INVALID_HANDLE;
}

template <class Body>
CUresult withLibrary(CUlibrary handle, Body body) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  CUlib_st* library = fake::lookup<CUlib_st>(handle);
  return library != nullptr ? body(library) : CUDA_ERROR_INVALID_HANDLE;
}

template <class Body>
CUresult withModule(CUmodule handle, Body body) {
  if (CUresult r = fake::checkInit()) return r;
  Lock lock = fake::lockState();
  CUmod_st* module = fake::lookup<CUmod_st>(handle);
  return module != nullptr ? body(module) : CUDA_ERROR_INVALID_HANDLE;
}

CUfunc_st* findFunction(CUmod_st* module, const char* name) {
  if (name == nullptr) return nullptr;
  for (auto& f : module->functions) {
    if (f->name == name) return f.get();
  }
  return nullptr;
}

}  // namespace

namespace fake {

CUfunc_st* resolveFunction(const void* handle) {
  if (CUfunc_st* f = lookup<CUfunc_st>(handle)) return f;
  CUkern_st* kernel = lookup<CUkern_st>(handle);
  return kernel != nullptr ? kernel->function : nullptr;
}

}  // namespace fake

// ---- modules ------------------------------------------------------------------------------------

FAKE_API CUresult cuModuleLoadData(CUmodule* module, const void* image) { return loadModule(module, image); }

FAKE_API CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                     CUjit_option* options, void** optionValues) {
  return loadModule(module, image);
}

FAKE_API CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) { return loadModule(module, fatCubin); }

FAKE_API CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  if (CUresult r = fake::checkInit()) return r;
  std::string text;
  if (!readFile(fname, &text)) return CUDA_ERROR_FILE_NOT_FOUND;
  return loadModule(module, text.c_str());
}

FAKE_API CUresult cuModuleUnload(CUmodule hmod) {
  return withModule(hmod, [](CUmod_st* module) {
    if (module->library != nullptr) return CUDA_ERROR_INVALID_HANDLE;  // owned by its library
    deleteModule(module);
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withModule(hmod, [hfunc, name](CUmod_st* module) {
    *hfunc = findFunction(module, name);
    return *hfunc != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
  });
}

FAKE_API CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule mod) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withModule(mod, [count](CUmod_st* module) {
    *count = static_cast<unsigned>(module->functions.size());
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int numFunctions, CUmodule mod) {
  if (functions == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withModule(mod, [functions, numFunctions](CUmod_st* module) {
    size_t n = std::min<size_t>(numFunctions, module->functions.size());
    for (size_t i = 0; i < n; ++i) functions[i] = module->functions[i].get();
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  return withModule(hmod, [](CUmod_st*) { return CUDA_ERROR_NOT_FOUND; });  // no globals
}

FAKE_API CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (CUresult r = fake::checkInit()) return r;
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}

// ---- libraries and kernels ----------------------------------------------------------------------

FAKE_API CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                                    void** jitOptionsValues, unsigned int numJitOptions,
                                    CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                    unsigned int numLibraryOptions) {
  return loadLibrary(library, code);
}

FAKE_API CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option* jitOptions,
                                        void** jitOptionsValues, unsigned int numJitOptions,
                                        CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                        unsigned int numLibraryOptions) {
  if (CUresult r = fake::checkInit()) return r;
  std::string text;
  if (!readFile(fileName, &text)) return CUDA_ERROR_FILE_NOT_FOUND;
  return loadLibrary(library, text.c_str());
}

FAKE_API CUresult cuLibraryUnload(CUlibrary library) {
  return withLibrary(library, [](CUlib_st* lib) {
    for (auto& kernel : lib->kernels) fake::unregisterHandle(kernel.get());
    deleteModule(lib->module);
    fake::unregisterHandle(lib);
    delete lib;
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  if (pKernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withLibrary(library, [pKernel, name](CUlib_st* lib) {
    for (auto& kernel : lib->kernels) {
      if (kernel->function->name == name) {
        *pKernel = kernel.get();
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_NOT_FOUND;
  });
}

FAKE_API CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withLibrary(lib, [count](CUlib_st* library) {
    *count = static_cast<unsigned>(library->kernels.size());
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels, CUlibrary lib) {
  if (kernels == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withLibrary(lib, [kernels, numKernels](CUlib_st* library) {
    size_t n = std::min<size_t>(numKernels, library->kernels.size());
    for (size_t i = 0; i < n; ++i) kernels[i] = library->kernels[i].get();
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withLibrary(library, [pMod](CUlib_st* lib) {
    *pMod = lib->module;
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  return withLibrary(library, [](CUlib_st*) { return CUDA_ERROR_NOT_FOUND; });  // no globals
}

FAKE_API CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withKernel(kernel, [pFunc](CUkern_st* k) {
    *pFunc = k->function;
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
  if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withKernel(kernel, [pLib](CUkern_st* k) {
    *pLib = k->library;
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withKernel(hfunc, [name](CUkern_st* k) {
    *name = k->function->name.c_str();
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  return withKernel(kernel, [=](CUkern_st* k) {
    if (!fake::validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
    return functionAttribute(k->function, attrib, pi);
  });
}

FAKE_API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  return withKernel(kernel, [=](CUkern_st* k) {
    if (!fake::validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
    return setFunctionAttribute(k->function, attrib, val);
  });
}

// ---- functions ----------------------------------------------------------------------------------

FAKE_API CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withFunction(hfunc, [name](CUfunc_st* f) {
    *name = f->name.c_str();
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  return withFunction(hfunc, [=](CUfunc_st* f) { return functionAttribute(f, attrib, pi); });
}

FAKE_API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  return withFunction(hfunc, [=](CUfunc_st* f) { return setFunctionAttribute(f, attrib, value); });
}

FAKE_API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  return withFunction(hfunc, [](CUfunc_st*) { return CUDA_SUCCESS; });
}

FAKE_API CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withFunction(hfunc, [hmod](CUfunc_st* f) {
    *hmod = f->module;
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function) {
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return withFunction(function, [state](CUfunc_st*) {
    *state = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuFuncLoad(CUfunction function) {
  return withFunction(function, [](CUfunc_st*) { return CUDA_SUCCESS; });
}
