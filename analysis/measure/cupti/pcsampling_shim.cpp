// kernelscope CUPTI PC-sampling shim: an injection library (CUDA_INJECTION64_PATH) that samples the
// warp state of every kernel of a run and writes JSON lines.
//
// UNVERIFIED ON HARDWARE. It compiles against the CUPTI 13 headers; it has never run on a GPU.
// It follows the documented flow of cupti_pcsampling.h: enable on context creation, read the
// stall-reason table, configure (continuous mode, parsed output, a sampling-data buffer), and
// flush with cuptiPCSamplingGetData "after every module load-unload-load" and before the context
// goes away, then cuptiPCSamplingDisable (whose final data lands in the configured buffer).
//
// Environment:
//   KERNELSCOPE_PCSAMPLING_OUT     output file (JSON lines); required, nothing is sampled without it
//   KERNELSCOPE_PCSAMPLING_PERIOD  sampling period exponent 5..31 (2^N cycles); default: CUPTI's choice
//   KERNELSCOPE_PCSAMPLING_CUBINS  directory to write each loaded cubin to, as <moduleId>.cubin, for
//                                  offline PC -> line mapping (cuobjdump/nvdisasm); optional
// Records:
//   {"type":"reasons","context":N,"reasons":[{"index":I,"name":"smsp__pcsamp_warps_issue_stalled_x"}...]}
//   {"type":"module","context":N,"moduleId":M,"cubinCrc":C,"cubinSize":S}
//   {"type":"pc","context":N,"cubinCrc":C,"function":"_Z...","functionIndex":F,"pcOffset":O,
//    "correlationId":K,"stalls":{"I":samples,...}}          (stall keys are reason indices)
//   {"type":"flush","context":N,"totalSamples":T,"droppedSamples":D,"nonUserKernelSamples":U,"hardwareBufferFull":B}
//   {"type":"error","where":"...","result":R,"message":"..."}

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr size_t kPcsPerBuffer = 10000;  // PCs per GetData call; drained in a loop, so only a batch size

struct ContextState {
    std::vector<uint32_t> reasonIndex;
    std::vector<CUpti_PCSamplingData> buffers;  // [0] handed to CUPTI at configuration, [1] for GetData
    std::vector<std::vector<CUpti_PCSamplingPCData>> pcData;
    std::vector<std::vector<CUpti_PCSamplingStallReason>> stallStorage;
    bool enabled = false;
};

std::mutex gLock;
FILE* gOut = nullptr;
std::map<CUcontext, ContextState> gContexts;
CUpti_SubscriberHandle gSubscriber = nullptr;

void writeEscaped(const char* s) {
    std::fputc('"', gOut);
    for (; s && *s; ++s) {
        unsigned char c = static_cast<unsigned char>(*s);
        if (c == '"' || c == '\\') {
            std::fputc('\\', gOut);
            std::fputc(c, gOut);
        } else if (c < 0x20) {
            std::fprintf(gOut, "\\u%04x", c);
        } else {
            std::fputc(c, gOut);
        }
    }
    std::fputc('"', gOut);
}

bool check(CUptiResult r, const char* where) {
    if (r == CUPTI_SUCCESS) return true;
    const char* msg = nullptr;
    cuptiGetResultString(r, &msg);
    if (gOut) {
        std::fprintf(gOut, "{\"type\":\"error\",\"where\":\"%s\",\"result\":%d,\"message\":", where, static_cast<int>(r));
        writeEscaped(msg ? msg : "unknown");
        std::fputs("}\n", gOut);
        std::fflush(gOut);
    }
    return false;
}

uint32_t contextId(CUcontext ctx) {
    uint32_t id = 0;
    cuptiGetContextId(ctx, &id);
    return id;
}

// Each PC record carries up to one entry per collected stall reason; the storage must outlive CUPTI's use.
void prepareBuffer(ContextState& st, size_t which) {
    const size_t n = st.reasonIndex.size();
    st.pcData[which].assign(kPcsPerBuffer, CUpti_PCSamplingPCData{});
    st.stallStorage[which].assign(kPcsPerBuffer * n, CUpti_PCSamplingStallReason{});
    for (size_t i = 0; i < kPcsPerBuffer; ++i) {
        st.pcData[which][i].size = sizeof(CUpti_PCSamplingPCData);
        st.pcData[which][i].stallReasonCount = n;
        st.pcData[which][i].stallReason = &st.stallStorage[which][i * n];
    }
    CUpti_PCSamplingData& b = st.buffers[which];
    std::memset(&b, 0, sizeof(b));
    b.size = sizeof(CUpti_PCSamplingData);
    b.collectNumPcs = kPcsPerBuffer;
    b.pPcData = st.pcData[which].data();
}

void writeData(CUcontext ctx, const CUpti_PCSamplingData& d) {
    const uint32_t cid = contextId(ctx);
    for (size_t i = 0; i < d.totalNumPcs; ++i) {
        const CUpti_PCSamplingPCData& pc = d.pPcData[i];
        std::fprintf(gOut, "{\"type\":\"pc\",\"context\":%u,\"cubinCrc\":%llu,\"function\":", cid,
                     static_cast<unsigned long long>(pc.cubinCrc));
        writeEscaped(pc.functionName);
        std::fprintf(gOut, ",\"functionIndex\":%u,\"pcOffset\":%llu,\"correlationId\":%u,\"stalls\":{",
                     pc.functionIndex, static_cast<unsigned long long>(pc.pcOffset), pc.correlationId);
        for (size_t r = 0; r < pc.stallReasonCount; ++r) {
            std::fprintf(gOut, "%s\"%u\":%u", r ? "," : "", pc.stallReason[r].pcSamplingStallReasonIndex,
                         pc.stallReason[r].samples);
        }
        std::fputs("}}\n", gOut);
    }
    std::fprintf(gOut,
                 "{\"type\":\"flush\",\"context\":%u,\"totalSamples\":%llu,\"droppedSamples\":%llu,"
                 "\"nonUserKernelSamples\":%llu,\"hardwareBufferFull\":%u}\n",
                 cid, static_cast<unsigned long long>(d.totalSamples), static_cast<unsigned long long>(d.droppedSamples),
                 static_cast<unsigned long long>(d.nonUsrKernelsTotalSamples), static_cast<unsigned>(d.hardwareBufferFull));
    std::fflush(gOut);
}

// GetData hands out at most collectNumPcs PCs per call; loop until CUPTI has nothing left.
void drain(CUcontext ctx, ContextState& st) {
    for (int guard = 0; guard < 100000; ++guard) {
        prepareBuffer(st, 1);
        CUpti_PCSamplingGetDataParams p = {};
        p.size = CUpti_PCSamplingGetDataParamsSize;
        p.ctx = ctx;
        p.pcSamplingData = &st.buffers[1];
        if (!check(cuptiPCSamplingGetData(&p), "cuptiPCSamplingGetData")) return;
        if (st.buffers[1].totalNumPcs == 0 && st.buffers[1].remainingNumPcs == 0) {
            writeData(ctx, st.buffers[1]);
            return;
        }
        writeData(ctx, st.buffers[1]);
        if (st.buffers[1].remainingNumPcs == 0) return;
    }
}

void enable(CUcontext ctx) {
    ContextState& st = gContexts[ctx];
    CUpti_PCSamplingEnableParams en = {};
    en.size = CUpti_PCSamplingEnableParamsSize;
    en.ctx = ctx;
    if (!check(cuptiPCSamplingEnable(&en), "cuptiPCSamplingEnable")) return;
    st.enabled = true;

    size_t n = 0;
    CUpti_PCSamplingGetNumStallReasonsParams np = {};
    np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
    np.ctx = ctx;
    np.numStallReasons = &n;
    if (!check(cuptiPCSamplingGetNumStallReasons(&np), "cuptiPCSamplingGetNumStallReasons")) return;

    std::vector<std::vector<char>> names(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, 0));
    std::vector<char*> namePtrs(n);
    for (size_t i = 0; i < n; ++i) namePtrs[i] = names[i].data();
    st.reasonIndex.assign(n, 0);
    CUpti_PCSamplingGetStallReasonsParams rp = {};
    rp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
    rp.ctx = ctx;
    rp.numStallReasons = n;
    rp.stallReasonIndex = st.reasonIndex.data();
    rp.stallReasons = namePtrs.data();
    if (!check(cuptiPCSamplingGetStallReasons(&rp), "cuptiPCSamplingGetStallReasons")) return;

    std::fprintf(gOut, "{\"type\":\"reasons\",\"context\":%u,\"reasons\":[", contextId(ctx));
    for (size_t i = 0; i < n; ++i) {
        std::fprintf(gOut, "%s{\"index\":%u,\"name\":", i ? "," : "", st.reasonIndex[i]);
        writeEscaped(namePtrs[i]);
        std::fputc('}', gOut);
    }
    std::fputs("]}\n", gOut);
    std::fflush(gOut);

    st.buffers.assign(2, CUpti_PCSamplingData{});
    st.pcData.resize(2);
    st.stallStorage.resize(2);
    prepareBuffer(st, 0);

    std::vector<CUpti_PCSamplingConfigurationInfo> cfg;
    CUpti_PCSamplingConfigurationInfo c = {};
    c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
    c.attributeData.stallReasonData.stallReasonCount = n;  // every reason, issued and not-issued variants
    c.attributeData.stallReasonData.pStallReasonIndex = st.reasonIndex.data();
    cfg.push_back(c);
    c = {};
    c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    c.attributeData.samplingDataBufferData.samplingDataBuffer = &st.buffers[0];
    cfg.push_back(c);
    c = {};
    c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    c.attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    cfg.push_back(c);
    c = {};
    c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
    c.attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    cfg.push_back(c);
    if (const char* period = std::getenv("KERNELSCOPE_PCSAMPLING_PERIOD")) {
        c = {};
        c.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
        c.attributeData.samplingPeriodData.samplingPeriod = static_cast<uint32_t>(std::atoi(period));
        cfg.push_back(c);
    }
    CUpti_PCSamplingConfigurationInfoParams cp = {};
    cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    cp.ctx = ctx;
    cp.numAttributes = cfg.size();
    cp.pPCSamplingConfigurationInfo = cfg.data();
    check(cuptiPCSamplingSetConfigurationAttribute(&cp), "cuptiPCSamplingSetConfigurationAttribute");
}

void disable(CUcontext ctx) {
    auto it = gContexts.find(ctx);
    if (it == gContexts.end() || !it->second.enabled) return;
    drain(ctx, it->second);
    CUpti_PCSamplingDisableParams dp = {};
    dp.size = CUpti_PCSamplingDisableParamsSize;
    dp.ctx = ctx;
    if (check(cuptiPCSamplingDisable(&dp), "cuptiPCSamplingDisable") && it->second.buffers[0].totalNumPcs) {
        writeData(ctx, it->second.buffers[0]);  // data left at disable lands in the configured buffer
    }
    gContexts.erase(it);
}

void writeModule(CUcontext ctx, const CUpti_ModuleResourceData* m) {
    if (!m || !m->pCubin || !m->cubinSize) return;
    CUpti_GetCubinCrcParams crc = {};
    crc.size = CUpti_GetCubinCrcParamsSize;
    crc.cubin = m->pCubin;
    crc.cubinSize = m->cubinSize;
    check(cuptiGetCubinCrc(&crc), "cuptiGetCubinCrc");
    std::fprintf(gOut, "{\"type\":\"module\",\"context\":%u,\"moduleId\":%u,\"cubinCrc\":%llu,\"cubinSize\":%zu}\n",
                 contextId(ctx), m->moduleId, static_cast<unsigned long long>(crc.cubinCrc), m->cubinSize);
    std::fflush(gOut);
    if (const char* dir = std::getenv("KERNELSCOPE_PCSAMPLING_CUBINS")) {
        std::string path = std::string(dir) + "/" + std::to_string(crc.cubinCrc) + ".cubin";
        if (FILE* f = std::fopen(path.c_str(), "wb")) {
            std::fwrite(m->pCubin, 1, m->cubinSize, f);
            std::fclose(f);
        }
    }
}

void CUPTIAPI onCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
    if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
    const auto* rd = static_cast<const CUpti_ResourceData*>(data);
    std::lock_guard<std::mutex> guard(gLock);
    switch (cbid) {
        case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
            enable(rd->context);
            break;
        case CUPTI_CBID_RESOURCE_MODULE_LOADED:
            writeModule(rd->context, static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor));
            break;
        case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING: {
            // PCs stay unique only until a module is unloaded (cupti_pcsampling.h, cuptiPCSamplingGetData).
            auto it = gContexts.find(rd->context);
            if (it != gContexts.end() && it->second.enabled) drain(rd->context, it->second);
            break;
        }
        case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
            disable(rd->context);
            break;
        default:
            break;
    }
}

void atExit() {
    std::lock_guard<std::mutex> guard(gLock);
    std::vector<CUcontext> live;
    for (auto& kv : gContexts) live.push_back(kv.first);
    for (CUcontext ctx : live) disable(ctx);  // primary contexts are often never destroyed explicitly
    if (gOut) std::fclose(gOut);
    gOut = nullptr;
}

}  // namespace

// Called by the CUDA driver when this library is named by CUDA_INJECTION64_PATH.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
    const char* out = std::getenv("KERNELSCOPE_PCSAMPLING_OUT");
    if (!out || !*out) return 0;
    gOut = std::fopen(out, "w");
    if (!gOut) return 0;
    if (!check(cuptiSubscribe(&gSubscriber, reinterpret_cast<CUpti_CallbackFunc>(onCallback), nullptr),
               "cuptiSubscribe")) {
        return 0;
    }
    check(cuptiEnableDomain(1, gSubscriber, CUPTI_CB_DOMAIN_RESOURCE), "cuptiEnableDomain");
    std::atexit(atExit);
    return 1;
}
