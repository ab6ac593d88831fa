-- Run after one of docs/neovim.md's setups was loaded as the init file (tests/editors/test_neovim.py
-- extracts it verbatim); it only drives the editor and records what Neovim received, as JSON in $KS_OUT.
-- Written against the API both Neovim 0.7 and 0.11 have.
local report = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/neovim_report.lua")
local file = os.getenv("KS_FILE")
local timeout = tonumber(os.getenv("KS_TIMEOUT") or "120000")
local result = {}

local function floats()
  local found = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      table.insert(found, table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n"))
    end
  end
  return found
end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  local function client()
    for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if c.name == "kernelscope" then return c end
    end
  end
  vim.wait(timeout, function() return client() ~= nil end, 50)
  local c = client()
  if not c then error("the documented config did not start kernelscope for " .. vim.bo[bufnr].filetype) end
  result.filetype = vim.bo[bufnr].filetype
  result.root_dir = c.root_dir or c.config.root_dir -- 0.7 keeps it only in the config
  result.encoding = c.offset_encoding

  -- Record the analyses the server reports, through the setup's own handler.
  result.finished = {}
  local setup_handler = c.handlers["kernelscope/analysisFinished"]
  c.handlers["kernelscope/analysisFinished"] = function(err, params, ctx, config)
    table.insert(result.finished, { cache = params.cache or vim.NIL, depth = params.depth or vim.NIL,
                                    sha = params.sourceSha256 or vim.NIL })
    if setup_handler then return setup_handler(err, params, ctx, config) end
  end
  result.setup_handler = setup_handler ~= nil

  -- Diagnostics come when the analysis is done, and the lenses with them: nothing here refreshes
  -- them (headless, CursorHold never fires), so they must come from the setup's handler.
  vim.wait(timeout, function()
    return #vim.diagnostic.get(bufnr) > 0 and #vim.lsp.codelens.get(bufnr) > 0
  end, 200)
  result.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(result.diagnostics, { lnum = d.lnum, col = d.col, source = d.source, message = d.message })
  end
  result.lenses = {}
  for _, l in ipairs(vim.lsp.codelens.get(bufnr)) do
    table.insert(result.lenses, { line = l.range.start.line, title = l.command and l.command.title or vim.NIL })
  end

  -- K is Neovim 0.11's own hover mapping; ask the same request it sends.
  vim.api.nvim_win_set_cursor(0, { 6, 14 }) -- `if (i < n) y[i] = y[i] * 2.0f;`
  local hover = vim.lsp.buf_request_sync(bufnr, "textDocument/hover",
    vim.lsp.util.make_position_params(0, c.offset_encoding), 20000)
  for _, r in pairs(hover or {}) do
    if r.result and r.result.contents then result.hover = r.result.contents.value end
  end

  -- The config's <leader>kl runs the lens; its client-side command shows the report in a float.
  result.mapping = vim.fn.maparg("<leader>kl", "n") ~= ""
  vim.api.nvim_win_set_cursor(0, { result.lenses[1].line + 1, 0 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<leader>kl", true, false, true), "mx", false)
  vim.wait(20000, function() return #floats() > 0 end, 50)
  result.floats = floats()
  for _, win in ipairs(vim.api.nvim_list_wins()) do -- close the report float
    if vim.api.nvim_win_get_config(win).relative ~= "" then vim.api.nvim_win_close(win, true) end
  end

  -- A line typed above the kernel and saved moves the lens down; deleting it and saving again is a
  -- cache hit that puts it back. Each time the lens follows without any refresh from here.
  local function lens_line()
    local l = vim.lsp.codelens.get(bufnr)[1]
    return l and l.range.start.line
  end
  local first = lens_line()
  result.saves = {}
  -- (a first plain :write: Neovim may add the final newline the file lacked, which is new content)
  for _, step in ipairs({ { 0, 0, {}, 0 }, { 0, 0, { "// moved" }, 1 }, { 0, 1, {}, 0 } }) do
    local n = #result.finished
    vim.api.nvim_buf_set_lines(bufnr, step[1], step[2], false, step[3])
    vim.cmd("silent write")
    local fd = assert(io.open(file, "rb"))
    local saved = vim.fn.sha256(fd:read("*a"))
    fd:close()
    -- the save's completed (full) analysis of what was written, skipping cancelled and quick ones
    -- and a previous save's analysis finishing late
    local function done()
      for i = n + 1, #result.finished do
        local f = result.finished[i]
        if f.cache ~= vim.NIL and f.depth == "full" and f.sha == saved then return f end
      end
    end
    vim.wait(timeout, function() return done() ~= nil and lens_line() == first + step[4] end, 50)
    table.insert(result.saves, { lens = lens_line(), expected = first + step[4], cache = (done() or {}).cache })
  end

  -- Blame as navigation: on a file whose hot loop's diagnostic names the loads it waits on, the
  -- config's <leader>kb fills the quickfix list from the related information and jumps there.
  local blame_file = os.getenv("KS_BLAME_FILE")
  if blame_file then
    vim.cmd("edit " .. vim.fn.fnameescape(blame_file))
    local blame_buf = vim.api.nvim_get_current_buf()
    local function pointing()
      for _, d in ipairs(vim.diagnostic.get(blame_buf)) do
        local lsp = d.user_data and d.user_data.lsp or {}
        if lsp.relatedInformation and #lsp.relatedInformation > 0 then return d end
      end
    end
    vim.wait(timeout, function() return pointing() ~= nil end, 100)
    local d = pointing()
    if not d then error("no kernelscope diagnostic with related information in " .. blame_file) end
    result.blame = { from = d.lnum, message = d.message, mapping = vim.fn.maparg("<leader>kb", "n") ~= "" }
    vim.api.nvim_win_set_cursor(0, { d.lnum + 1, 0 })
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<leader>kb", true, false, true), "mx", false)
    result.blame.to = vim.api.nvim_win_get_cursor(0)[1] - 1
    result.blame.quickfix = {}
    for _, item in ipairs(vim.fn.getqflist()) do
      table.insert(result.blame.quickfix, { lnum = item.lnum - 1, text = item.text })
    end
  end
  vim.lsp.stop_client(c.id)
  vim.wait(5000, function() return client() == nil end, 50)
end)
report(ok, err, result)
