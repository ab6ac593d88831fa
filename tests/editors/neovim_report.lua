-- Shared by the Neovim drivers: write what Neovim received (or the error) as JSON to $KS_OUT and quit.
return function(ok, err, result)
  if not ok then result.error = tostring(err) end
  local f = io.open(os.getenv("KS_OUT"), "w")
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd("qa!")
end
