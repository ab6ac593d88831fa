-- Headless Neovim (0.7+) as the LSP client of kernelscope; driven by tests/editors/test_neovim.py.
-- Everything Neovim itself received is written as JSON to $KS_OUT, errors included.
local report = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/neovim_report.lua")
local file = os.getenv("KS_FILE")
local result = { finished = {}, events = {} }

local function diags(bufnr)
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(list, { lnum = d.lnum, col = d.col, end_col = d.end_col, message = d.message,
                         source = d.source, severity = d.severity })
  end
  table.sort(list, function(a, b) return a.lnum < b.lnum end)
  return list
end

local function hover_text(bufnr, line, col)
  vim.api.nvim_win_set_cursor(0, { line + 1, col })
  local encoding = vim.lsp.get_client_by_id(result.client_id).offset_encoding
  local params = vim.lsp.util.make_position_params(0, encoding)
  local res = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 20000)
  for _, r in pairs(res or {}) do
    if r.result and r.result.contents then
      return r.result.contents.value or vim.inspect(r.result.contents)
    end
    if r.err then return "ERROR " .. vim.inspect(r.err) end
  end
  return vim.NIL
end

local ok, err = pcall(function()
  vim.cmd("filetype on") -- otherwise buffers opened during -u init have no filetype
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  local id = vim.lsp.start_client({
    name = "kernelscope",
    cmd = { os.getenv("KS_PYTHON"), "-m", "kernelscope.server" },
    root_dir = os.getenv("KS_ROOT"),
    settings = { kernelscope = { cache = { directory = os.getenv("KS_CACHE") } } },
    init_options = { workspaceTrusted = true }, -- the test's own cache.directory counts only then
    handlers = {
      ["kernelscope/analysisFinished"] = function(_, params)
        if params.depth ~= "quick" then table.insert(result.finished, params) end -- count complete analyses
      end,
    },
  })
  vim.lsp.buf_attach_client(bufnr, id)
  result.client_id = id
  local timeout = tonumber(os.getenv("KS_TIMEOUT") or "120000")

  vim.wait(timeout, function() return #result.finished >= 1 and #vim.diagnostic.get(bufnr) > 0 end, 50)
  result.opened = diags(bufnr)
  result.encoding = vim.lsp.get_client_by_id(id).offset_encoding

  -- Two lines typed at the top, then :write (didChange + didSave) and a new analysis.
  vim.api.nvim_buf_set_lines(bufnr, 0, 0, false, { "// added 1", "// added 2" })
  vim.cmd("write")
  vim.wait(timeout, function() return #result.finished >= 2 end, 50)
  vim.wait(2000, function() return false end, 50) -- let the publish that preceded it be handled
  result.saved = diags(bufnr)

  result.hover_kernel = hover_text(bufnr, 4, 18) -- `twice` in `__global__ void twice(` (shifted by 2)
  result.hover_line = hover_text(bufnr, 7, 14) -- `if (i < n) y[i] = y[i] * 2.0f;`
  vim.lsp.stop_client(id)
  vim.wait(5000, function() return vim.lsp.get_client_by_id(id) == nil end, 50)
end)
report(ok, err, result)
