"""Written by `manage.py tool_catalog` (tools_app/catalog.py): do not edit by hand.

The words of the built-in tools people read (descriptions of tools and arguments, the Tools
Manager's group labels and settings), for makemessages. docs/TRANSLATING.md says more.
"""

from django.utils.translation import gettext_noop as _

STRINGS = [
    # group shell
    _('Shell'),
    # group shell
    _("Run command lines in the conversation's sandboxed workspace."),
    # group shell: settings
    _('Longest a command may run (s).'),
    # group shell: settings
    _('Per-tool calls allowed per minute (0 = unlimited).'),
    # group shell: settings
    _("Explain why: every function of this group asks the model to say why it calls it (_reasoningForCall, shown on the card); a function's own switch turns it on for that function alone."),
    # group shell: settings
    _("Secrets (keys, tokens, private keys) in a call's arguments: what to do."),
    # group shell: settings
    _("Secrets in a call's result, before the model reads it."),
    # group shell: settings
    _('Personal data (e-mail, phone, card, IBAN) in the arguments.'),
    # group shell: settings
    _("Personal data in a call's result, before the model reads it."),
    # group shell: settings
    _('Filter webhook: an https:// endpoint asked about every call of this group (empty: none).'),
    # group shell: settings
    _("Key the filter webhook's requests are signed with."),
    # group shell: settings
    _('Longest the filter webhook may take to answer (s).'),
    # group shell: settings
    _('When the filter webhook fails or answers nonsense: refuse the call (closed) or let it through (open).'),
    # group shell: settings
    _('Hosts of the filter webhook that may be on a private address (and may use http://), one per line.'),
    # group shell: settings
    _('Where commands run: auto (Docker if reachable, else bubblewrap), docker, bubblewrap, or none (directly on the worker host — no isolation).'),
    # group shell: settings
    _('Programs a command line may run, one per line (empty: any program; the sandbox still applies).'),
    # group shell: settings
    _('Programs never allowed, one per line; an entry with arguments is a command pattern (rm -rf: rm with -r and -f, however written).'),
    # group shell: settings
    _('Give commands network access.'),
    # group shell: settings
    _('Output kept per stream (bytes).'),
    # group shell: settings
    _('Longest command line accepted (characters).'),
    # group shell: settings
    _('Timeout'),
    # group shell: settings
    _('Calls per minute'),
    # group shell: settings
    _('Explain why'),
    # group shell: settings
    _('Guard secrets arguments'),
    # group shell: settings
    _('Guard secrets result'),
    # group shell: settings
    _('Guard pii arguments'),
    # group shell: settings
    _('Guard pii result'),
    # group shell: settings
    _('Filter url'),
    # group shell: settings
    _('Filter secret'),
    # group shell: settings
    _('Filter timeout'),
    # group shell: settings
    _('Filter on failure'),
    # group shell: settings
    _('Filter private hosts'),
    # group shell: settings
    _('Sandbox backend'),
    # group shell: settings
    _('Allowed commands'),
    # group shell: settings
    _('Blocked commands'),
    # group shell: settings
    _('Allow network'),
    # group shell: settings
    _('Max output'),
    # group shell: settings
    _('Max command'),
    # tool shell_exec
    _('Run a shell command line (bash) in the workspace and return its exit code and output.'),
    # tool shell_exec
    _('The command line, e.g. `ls -la` or `pytest -q`.'),
    # tool shell_exec
    _('Seconds before the command is killed (capped by the admin).'),
    # tool shell_exec
    _('Working directory, relative to the workspace.'),
    # tool shell_exec
    _('Command'),
    # tool shell_exec
    _('Cwd'),
    # group file
    _('File'),
    # group file
    _("Read, write, delete and list files in the conversation's workspace."),
    # group file: settings
    _('Longest an operation may run (s).'),
    # group file: settings
    _("Workspace-relative paths the file tools may touch, one per line ('.' = the whole workspace)."),
    # group file: settings
    _('Larger writes are refused; larger reads are cut with a notice (bytes).'),
    # group file: settings
    _('Folders of the worker host the file tools may use, one per line: name=/absolute/path (read-only) or name=/absolute/path rw. Each appears in the sandbox as /mnt/<name>; links in it never lead out, and nothing is written through one. The sandbox user (SANDBOX_UID) must be able to read (and for rw, write) it.'),
    # group file: settings
    _("Largest file a person may upload into a conversation's workspace (MB); 0: the UPLOAD_MAX_MB setting. Never above MAX_REQUEST_BODY_BYTES."),
    # group file: settings
    _("File extensions people may upload, one per line ('*': any); empty: the UPLOAD_ALLOWED_TYPES setting."),
    # group file: settings
    _('Allowed paths'),
    # group file: settings
    _('Max file'),
    # group file: settings
    _('Host folders'),
    # group file: settings
    _('Upload max'),
    # group file: settings
    _('Upload allowed types'),
    # tool file_delete
    _('Delete a file (or an empty directory) in the workspace or a writable host folder.'),
    # tool file_delete
    _('Path relative to the workspace.'),
    # tool file_delete
    _('Path'),
    # tool file_list
    _('List a directory of the workspace (optionally recursively); /mnt lists the host folders an admin granted.'),
    # tool file_list
    _('Directory relative to the workspace, /mnt, or /mnt/<folder>/...'),
    # tool file_list
    _('Include subdirectories.'),
    # tool file_list
    _('Recursive'),
    # tool file_read
    _('Read a text file from the workspace (optionally a range of lines), or from a host folder an admin granted (/mnt/<name>/...).'),
    # tool file_read
    _('Path relative to the workspace, or /mnt/<folder>/... in a host folder.'),
    # tool file_read
    _('First line to return (1-based).'),
    # tool file_read
    _('How many lines (default: all).'),
    # tool file_read
    _('Start line'),
    # tool file_read
    _('Max lines'),
    # tool file_write
    _('Write (or append to) a text file in the workspace, or in a host folder an admin granted for writing (/mnt/<name>/...); parent directories are created.'),
    # tool file_write
    _('Path relative to the workspace, or /mnt/<folder>/... in a writable host folder.'),
    # tool file_write
    _('The text to write.'),
    # tool file_write
    _('overwrite or append.'),
    # tool file_write
    _('Content'),
    # tool file_write
    _('Mode'),
    # group dev
    _('Dev'),
    # group dev
    _("A coding agent's toolset: run tests, git, code search, read/write files. run_tests obeys the Shell allow/block lists; the file tools obey the File settings."),
    # group dev: settings
    _('Longest a call may run (s).'),
    # group dev: settings
    _('Author of agent commits.'),
    # group dev: settings
    _('Their e-mail.'),
    # group dev: settings
    _("Commands run_tests may run, one per line: a call's command must start with one of them, word by word (pytest -q tests/ starts with pytest). The Shell group's allow/block lists apply too."),
    # group dev: settings
    _('Matches search_code returns.'),
    # group dev: settings
    _('Git author name'),
    # group dev: settings
    _('Git author email'),
    # group dev: settings
    _('Test commands'),
    # group dev: settings
    _('Max search results'),
    # tool git_add
    _('Stage files for the next commit.'),
    # tool git_add
    _('Paths to stage, relative to the workspace.'),
    # tool git_add
    _('Files'),
    # tool git_commit
    _('Commit the staged changes with a message.'),
    # tool git_commit
    _('The commit message.'),
    # tool git_commit
    _('Message'),
    # tool git_status
    _("Show the workspace repository's status (a repository is created if there is none)."),
    # tool list_directory
    _('List the files and folders of a directory of the workspace.'),
    # tool list_directory
    _('Directory relative to the workspace.'),
    # tool read_file
    _('Read a file of the workspace.'),
    # tool run_tests
    _("Run the project's tests (pytest by default) and return their output, errors and return code."),
    # tool run_tests
    _("The full test command. Default: 'pytest -q --tb=short'."),
    # tool run_tests
    _('Working directory, relative to the workspace (default: its root).'),
    # tool search_code
    _("Search the workspace's files for a regular expression (ripgrep)."),
    # tool search_code
    _('Regular expression to look for.'),
    # tool search_code
    _('Where to search, relative to the workspace.'),
    # tool search_code
    _('Only files matching this glob, e.g. *.py.'),
    # tool search_code
    _('Pattern'),
    # tool search_code
    _('Glob'),
    # tool write_file
    _('Write a file of the workspace (created with its directories, or overwritten).'),
    # tool write_file
    _('The full new content of the file.'),
    # group browser
    _('Browser'),
    # group browser
    _('A real Chromium per conversation: open pages, click, type, read and take screenshots. Every request is checked against the allowed domains and the SSRF guard.'),
    # group browser: settings
    _('Longest one browser action may take (s).'),
    # group browser: settings
    _('Hosts pages and every request they make may reach, one per line; globs like *.example.com (empty: any public host). Everything else is blocked.'),
    # group browser: settings
    _('Private or loopback hosts, IPs or CIDRs explicitly allowed despite the SSRF guard (e.g. an intranet site), one per line.'),
    # group browser: settings
    _('Screenshots kept per conversation (0: none).'),
    # group browser: settings
    _('Viewport width (px).'),
    # group browser: settings
    _('Viewport height (px).'),
    # group browser: settings
    _('Let pages run JavaScript.'),
    # group browser: settings
    _('Text returned by browser_extract (characters).'),
    # group browser: settings
    _("Attach screenshots to the model's tool result as images (only with a provider that accepts image input; otherwise the result names the file)."),
    # group browser: settings
    _('Allowed domains'),
    # group browser: settings
    _('Private allowed'),
    # group browser: settings
    _('Max screenshots per conversation'),
    # group browser: settings
    _('Viewport width'),
    # group browser: settings
    _('Viewport height'),
    # group browser: settings
    _('Javascript enabled'),
    # group browser: settings
    _('Max extract'),
    # group browser: settings
    _('Send images to model'),
    # tool browser_back
    _("Go back to the previous page in the conversation's browser history."),
    # tool browser_back
    _("Seconds this action may take (capped by the admin's maximum)."),
    # tool browser_click
    _('Click an element of the current page, found by CSS selector or by its visible text, and wait for any navigation it starts.'),
    # tool browser_click
    _('CSS selector, e.g. a#readme.'),
    # tool browser_click
    _('Visible text of the element, e.g. README.'),
    # tool browser_click
    _('Selector'),
    # tool browser_click
    _('Text'),
    # tool browser_extract
    _('Read the current page: its visible text, or its links (text and URL), optionally only inside the elements matching a CSS selector. Long text is cut with a notice.'),
    # tool browser_extract
    _('What to extract.'),
    # tool browser_extract
    _('Only inside the elements matching this CSS selector.'),
    # tool browser_extract
    _('Kind'),
    # tool browser_open
    _("Open a web page in the conversation's browser and return its final URL, title and HTTP status. Cookies persist across calls in this conversation."),
    # tool browser_open
    _('http:// or https:// URL.'),
    # tool browser_open
    _('Url'),
    # tool browser_screenshot
    _('Take a PNG screenshot of the current page (the viewport, the full page, or one element) and return its file path and size. People see it in the tool card.'),
    # tool browser_screenshot
    _('The whole scrollable page, not just the viewport.'),
    # tool browser_screenshot
    _('CSS selector of one element to capture instead of the page.'),
    # tool browser_screenshot
    _('Full page'),
    # tool browser_type
    _('Type text into an input of the current page (replacing its value), optionally pressing Enter to submit.'),
    # tool browser_type
    _('CSS selector of the input, e.g. input[name=q].'),
    # tool browser_type
    _('The text to type.'),
    # tool browser_type
    _('Press Enter afterwards.'),
    # tool browser_type
    _('Submit'),
    # tool browser_wait
    _("Wait until an element reaches a state, or for a number of milliseconds (capped by the call's timeout)."),
    # tool browser_wait
    _('CSS selector to wait for.'),
    # tool browser_wait
    _('State the element must reach.'),
    # tool browser_wait
    _('Just wait this long instead.'),
    # tool browser_wait
    _('State'),
    # tool browser_wait
    _('Milliseconds'),
    # group http
    _('HTTP'),
    # group http
    _('HTTP requests to allowed hosts, behind an SSRF guard (no private, loopback or metadata addresses unless an admin allows them).'),
    # group http: settings
    _('Longest a request may take (s).'),
    # group http: settings
    _('Hosts the tool may reach, one per line; globs like *.github.com (empty: any public host).'),
    # group http: settings
    _('Private or loopback hosts, IPs or CIDRs explicitly allowed despite the SSRF guard (e.g. an intranet service), one per line.'),
    # group http: settings
    _('Body kept per response (bytes).'),
    # group http: settings
    _('Follow redirects (each hop re-checked).'),
    # group http: settings
    _('Most redirects followed.'),
    # group http: settings
    _('Allowed hosts'),
    # group http: settings
    _('Max response'),
    # group http: settings
    _('Follow redirects'),
    # group http: settings
    _('Max redirects'),
    # tool http_request
    _('Send an HTTP request and return the status, headers and body text.'),
    # tool http_request
    _('HTTP method.'),
    # tool http_request
    _('Extra request headers.'),
    # tool http_request
    _('Raw request body.'),
    # tool http_request
    _('A JSON request body.'),
    # tool http_request
    _('Seconds (capped by the admin).'),
    # tool http_request
    _('Method'),
    # tool http_request
    _('Headers'),
    # tool http_request
    _('Body'),
    # tool http_request
    _('Json'),
    # group research
    _('Research'),
    # group research
    _('Web search through an admin-configured backend (SearXNG or Tavily-compatible) and page reading as clean text, behind the SSRF guard.'),
    # group research: settings
    _('Longest a call may run, all pages together (s).'),
    # group research: settings
    _("Where web_search asks: none (web_search fails with a clear error), searxng (a SearXNG instance's JSON API) or tavily (a Tavily-compatible API)."),
    # group research: settings
    _('Base URL of the search backend, e.g. https://searx.example.org (SearXNG: /search?format=json is added) or https://api.tavily.com (POST /search).'),
    # group research: settings
    _('API key of a Tavily-compatible backend (unused by SearXNG).'),
    # group research: settings
    _('A search backend on a private or loopback address (e.g. a SearXNG in the same network) must be named here: its host, IP or CIDR, one per line.'),
    # group research: settings
    _('Most results one web_search returns.'),
    # group research: settings
    _('Longest the search backend may take to answer (s).'),
    # group research: settings
    _('Most URLs one extract_page_content call may read.'),
    # group research: settings
    _('Text kept per page (characters).'),
    # group research: settings
    _('Longest one page may take to download (s).'),
    # group research: settings
    _('Search backend'),
    # group research: settings
    _('Search url'),
    # group research: settings
    _('Search api key'),
    # group research: settings
    _('Search private allowed'),
    # group research: settings
    _('Max results'),
    # group research: settings
    _('Search timeout'),
    # group research: settings
    _('Max urls'),
    # group research: settings
    _('Max chars per page'),
    # group research: settings
    _('Page timeout'),
    # tool extract_page_content
    _('Download web pages and return their main text (navigation, scripts and styles removed), each with its source number (the same number web_search gave it, or a new one). Each URL gets its own result: one page failing does not fail the others. A page may show figures for other years or periods than asked: check its time matches the question. When a page contradicts the search snippet on a fact, prefer the snippet.'),
    # tool extract_page_content
    _('Why this is needed and what you expect to find.'),
    # tool extract_page_content
    _('http:// or https:// URLs of the pages to read.'),
    # tool extract_page_content
    _('Reasoning'),
    # tool extract_page_content
    _('Urls'),
    # tool web_search
    _("Search the web. Returns a list of results, each with its source number, title, url and snippet; the numbers stay the same for the whole turn (cite them as [1] [2]). Read a result's page with extract_page_content when the snippet is not enough. Snippets often hold the direct answer: read them carefully. For dates and numbers, put the year or period in the query."),
    # tool web_search
    _("The search query, in the same language as the user's request."),
    # tool web_search
    _('How many results to return, 1-10.'),
    # tool web_search
    _('Query'),
    # group docker
    _('Docker'),
    # group docker
    _('List, inspect and read logs of containers on a Docker engine; exec, start, stop and restart, and creating containers from allowed images, only when an admin allows them.'),
    # group docker: settings
    _('Only admins (staff) may use the Docker tools; off: every user, within the allowed operations and containers.'),
    # group docker: settings
    _("docker_inspect shows the values of a container's environment variables (they often hold passwords and keys); off: their names, values redacted."),
    # group docker: settings
    _('Engine address: a socket path (/var/run/docker.sock) or URL (tcp://host:2376). Empty: DOCKER_HOST or the default socket.'),
    # group docker: settings
    _('Operations the tools may perform, one per line (list, inspect, logs, exec, start, stop, restart; create and remove for the containers the tool makes).'),
    # group docker: settings
    _('Container names (globs like web-*) or labels (label:app=web), one per line. Sandbox containers only match when named exactly.'),
    # group docker: settings
    _('Log output kept per call (bytes).'),
    # group docker: settings
    _('Images container_create and container_run may use, one per line; globs like nginx:* or registry.example/team/* (an image without a tag is :latest). Empty: none.'),
    # group docker: settings
    _('Host ports the created containers may publish, one per line: 8080 or 8000-8099. Empty: none.'),
    # group docker: settings
    _('Host address published ports listen on (0.0.0.0: every interface).'),
    # group docker: settings
    _('Network the created containers join: none (no network), or the name of a Docker network (bridge, or one of your own). Publishing ports needs one.'),
    # group docker: settings
    _('Memory limit of each created container.'),
    # group docker: settings
    _('CPUs each created container may use.'),
    # group docker: settings
    _('Processes each created container may run.'),
    # group docker: settings
    _('Capabilities given back to created containers (all are dropped), one per line, e.g. CHOWN, SETUID, SETGID, NET_BIND_SERVICE for a stock nginx.'),
    # group docker: settings
    _('Containers the tool may have created at once (running or not); container_remove frees a place.'),
    # group docker: settings
    _('Staff only'),
    # group docker: settings
    _('Show env'),
    # group docker: settings
    _('Engine'),
    # group docker: settings
    _('Allowed operations'),
    # group docker: settings
    _('Allowed containers'),
    # group docker: settings
    _('Max log'),
    # group docker: settings
    _('Allowed images'),
    # group docker: settings
    _('Allowed ports'),
    # group docker: settings
    _('Publish address'),
    # group docker: settings
    _('Container network'),
    # group docker: settings
    _('Container memory'),
    # group docker: settings
    _('Container cpus'),
    # group docker: settings
    _('Container pids'),
    # group docker: settings
    _('Container capabilities'),
    # group docker: settings
    _('Max containers'),
    # tool container_create
    _("Create a container (not started) from an image an admin allows, with the admin's resource limits, no host files and no privileges. Its name starts with cctool-; start it with docker_start, or use container_run to create and start at once."),
    # tool container_create
    _("Image, e.g. nginx:1.27 (must be on the admin's list of images)."),
    # tool container_create
    _('A short name; the container is called cctool-<name>.'),
    # tool container_create
    _("Command to run instead of the image's default (split like a shell, run without one)."),
    # tool container_create
    _('Environment variables, NAME=value.'),
    # tool container_create
    _("Published ports, HOST:CONTAINER (as docker run -p), e.g. 8080:80; the host port must be in the admin's ranges."),
    # tool container_create
    _('Image'),
    # tool container_create
    _('Name'),
    # tool container_create
    _('Env'),
    # tool container_create
    _('Ports'),
    # tool container_remove
    _('Remove a container this tool created (stopped first when force=true).'),
    # tool container_remove
    _('Container name or id.'),
    # tool container_remove
    _('Stop it first if it is running.'),
    # tool container_remove
    _('Container id'),
    # tool container_remove
    _('Force'),
    # tool container_run
    _("Create and start a container from an allowed image (as docker run). With detach=false, wait for it to end (within the call's timeout) and return its exit code and logs, then remove it."),
    # tool container_run
    _('Leave it running; false: wait, return, remove.'),
    # tool container_run
    _('Detach'),
    # tool container_stop
    _('Stop a container this tool created (container_create / container_run).'),
    # tool docker_exec
    _('Run a command in a container (split like a shell would, run without a shell).'),
    # tool docker_exec
    _('The command, e.g. `cat /etc/hostname`.'),
    # tool docker_inspect
    _("Show a container's state, health, restart count, image, ports, mounts, labels and environment variable names (values only when an admin allows it)."),
    # tool docker_list_containers
    _('List containers (running only unless all=true), with state, health and restarts.'),
    # tool docker_list_containers
    _('Include stopped containers.'),
    # tool docker_list_containers
    _('Only containers whose name contains this.'),
    # tool docker_list_containers
    _('All'),
    # tool docker_logs
    _("Read a container's recent logs."),
    # tool docker_logs
    _('Lines from the end.'),
    # tool docker_logs
    _('Only logs newer than this: seconds (e.g. 600) or an ISO timestamp.'),
    # tool docker_logs
    _('Tail'),
    # tool docker_logs
    _('Since'),
    # tool docker_restart
    _('Restart a container.'),
    # tool docker_start
    _('Start a stopped container.'),
    # tool docker_stop
    _('Stop a running container.'),
    # group memory
    _('Memory'),
    # group memory
    _('Per-user memory: archival facts found by hybrid (full-text + vector) search, and a small core memory always in the system prompt.'),
    # group memory: settings
    _('Vectors for hybrid search: local (all-MiniLM-L6-v2 in the worker, offline; the default), provider (an OpenAI-compatible /v1/embeddings), or none (full-text only). Existing memory is embedded in the background after a change.'),
    # group memory: settings
    _('With embedder = provider: the LLM provider whose base URL and API key are used (its name in Admin → Providers; empty: the default provider).'),
    # group memory: settings
    _('With embedder = provider: the embedding model, e.g. text-embedding-3-small (OpenAI) or nomic-embed-text (Ollama).'),
    # group memory: settings
    _('Archival memory is indexed in chunks of this size.'),
    # group memory: settings
    _('Text repeated between consecutive chunks.'),
    # group memory: settings
    _('Longest text one memory_save accepts.'),
    # group memory: settings
    _('Chunks a user may store (0 = unlimited).'),
    # group memory: settings
    _('Results taken from each ranking before fusing them.'),
    # group memory: settings
    _('Vector matches less similar than this (cosine) are left out; with all-MiniLM-L6-v2, unrelated sentences score about 0-0.2 and related ones 0.3-0.8.'),
    # group memory: settings
    _('Most results one search returns.'),
    # group memory: settings
    _("Size cap of a user's core memory (keys + values)."),
    # group memory: settings
    _('Put core memory into every system prompt.'),
    # group memory: settings
    _('Embedder'),
    # group memory: settings
    _('Embedding provider'),
    # group memory: settings
    _('Embedding model'),
    # group memory: settings
    _('Chunk'),
    # group memory: settings
    _('Chunk overlap'),
    # group memory: settings
    _('Max content'),
    # group memory: settings
    _('Max chunks per user'),
    # group memory: settings
    _('Search candidates'),
    # group memory: settings
    _('Min similarity'),
    # group memory: settings
    _('Max top k'),
    # group memory: settings
    _('Core max'),
    # group memory: settings
    _('Core in prompt'),
    # tool memory_core_delete
    _('Delete one fact of core memory. Deleting a key that does not exist is an error.'),
    # tool memory_core_delete
    _('Which section.'),
    # tool memory_core_delete
    _('The key to delete.'),
    # tool memory_core_delete
    _('Section'),
    # tool memory_core_delete
    _('Key'),
    # tool memory_core_get
    _("Show the user's core memory: the small set of facts that is always in your prompt, in two sections, user and agent."),
    # tool memory_core_update
    _('Set one fact of core memory (always in your prompt; keep it short). section "user": about the user (name, preferences); "agent": about yourself (persona, standing instructions). An existing key is overwritten.'),
    # tool memory_core_update
    _('A short name, e.g. name.'),
    # tool memory_core_update
    _('The fact.'),
    # tool memory_core_update
    _('Value'),
    # tool memory_save
    _("Remember a fact or a text in the user's archival memory (kept across conversations). Long text is split into chunks and indexed for memory_search."),
    # tool memory_save
    _('What to remember, self-contained (it will be read without this conversation).'),
    # tool memory_save
    _('Where the fact comes from, e.g. manual, a URL or a file name.'),
    # tool memory_save
    _('Source'),
    # tool memory_search
    _("Search the user's archival memory (hybrid: full-text and, when an embedder is configured, semantic similarity). Returns chunks with their source and date."),
    # tool memory_search
    _('What to look for.'),
    # tool memory_search
    _('How many results at most.'),
    # tool memory_search
    _('Top k'),
    # group docs
    _('Docs'),
    # group docs
    _("Read and search documentation: this project's docs/ and folders an admin adds."),
    # group docs: settings
    _("Offer this project's own docs/ folder (as 'docs')."),
    # group docs: settings
    _('More folders on the worker host, one per line: name=/absolute/path (or just the path; it is named after its last part). Links inside are not followed.'),
    # group docs: settings
    _('Most files listed and indexed.'),
    # group docs: settings
    _('Most bytes docs_read returns of a file.'),
    # group docs: settings
    _('docs_search is hybrid: full-text plus the meaning of each section, with the local all-MiniLM-L6-v2 (offline); none: full-text only.'),
    # group docs: settings
    _('Sections less similar to the query than this (cosine) are not found by meaning.'),
    # group docs: settings
    _('Include project docs'),
    # group docs: settings
    _('Folders'),
    # group docs: settings
    _('Max files'),
    # group docs: settings
    _('Max read'),
    # tool docs_list
    _('List the documentation files you can read (path, title, size).'),
    # tool docs_read
    _('Read a documentation file by the path docs_list or docs_search gave, e.g. docs/USER_TOOLS_GUIDE.md; add #Heading to read only that section.'),
    # tool docs_read
    _('folder/file path, optionally with #Heading.'),
    # tool docs_search
    _('Search the documentation by words and by meaning; returns matching sections (path#heading) with a snippet. Read one with docs_read.'),
    # tool docs_search
    _('Words to look for.'),
    # tool docs_search
    _('How many sections at most.'),
    # group skills
    _('Skills'),
    # group skills
    _('Task instructions (SKILL.md) from the data directory and the conversation workspace; names in the prompt, full text on demand.'),
    # group skills: settings
    _("Also offer skills from the conversation workspace's skills/ folder (files the model and the user can write; they win over data skills of the same name)."),
    # group skills: settings
    _('Offer the skills that come with Control Center (testing, git-ops, memory); a data or workspace skill of the same name replaces one.'),
    # group skills: settings
    _('Largest SKILL.md read.'),
    # group skills: settings
    _('Most skills per place.'),
    # group skills: settings
    _('List skill names and descriptions in every system prompt.'),
    # group skills: settings
    _('Workspace skills'),
    # group skills: settings
    _('Shipped skills'),
    # group skills: settings
    _('Max skill'),
    # group skills: settings
    _('Max skills'),
    # group skills: settings
    _('In prompt'),
    # tool skill_list
    _('List the available skills (name, description, where each comes from).'),
    # tool skill_load
    _('Load the full instructions of a skill by name, before doing the task it describes.'),
    # tool skill_load
    _("The skill's name."),
    # group messaging
    _('Messaging'),
    # group messaging
    _('send_message: into another conversation of the same user, to webhook targets an admin names (behind the SSRF guard), or to Telegram chats on an allow-list.'),
    # group messaging: settings
    _('Allow posting into another conversation of the same user.'),
    # group messaging: settings
    _('Webhook targets, one per line: name=https://host/path. The model names a target, never a URL; the text is POSTed as JSON {"text": ...}.'),
    # group messaging: settings
    _('Private or loopback hosts, IPs or CIDRs a webhook may reach despite the SSRF guard, one per line.'),
    # group messaging: settings
    _('Longest message sent.'),
    # group messaging: settings
    _("The Telegram bot's token (from @BotFather). Stored encrypted; the model, the audit log and the cards never see it."),
    # group messaging: settings
    _('Telegram chats the model may send to, one per line: a chat id (-1001234567890) or a public @channel. Nothing else is reachable.'),
    # group messaging: settings
    _('A person\'s own Telegram chat, one per line: username=chat id. That person\'s calls may send to chat_id "me"; nobody else\'s may.'),
    # group messaging: settings
    _('Bot API base URL. Another one (a local Bot API server) on a private or loopback address must also be listed under private hosts.'),
    # group messaging: settings
    _('Conversation channel'),
    # group messaging: settings
    _('Webhooks'),
    # group messaging: settings
    _('Max text'),
    # group messaging: settings
    _('Telegram bot token'),
    # group messaging: settings
    _('Telegram chats'),
    # group messaging: settings
    _('Telegram people'),
    # group messaging: settings
    _('Telegram api url'),
    # tool send_message
    _('Send a message. channel "conversation": post it into another of the user\'s conversations (chat_id = that conversation\'s id). channel "webhook": send it to a target an admin configured (chat_id = the target\'s name). channel "telegram": send it through the team\'s Telegram bot to a chat an admin allowed (chat_id = that chat\'s id or @name, or "me" for the chat linked to the user).'),
    # tool send_message
    _('Where to send it.'),
    # tool send_message
    _('A conversation id, a webhook target\'s name, or a Telegram chat id (or "me").'),
    # tool send_message
    _('The message (Markdown).'),
    # tool send_message
    _('Channel'),
    # tool send_message
    _('Chat id'),
    # group schedules
    _('Schedules'),
    # group schedules
    _('Cron schedules: at each due time a message runs as an agent turn of its owner, in a conversation of theirs or a new one.'),
    # group schedules: settings
    _('Schedules one user may have (the quota).'),
    # group schedules: settings
    _('Shortest time allowed between two firings of one schedule (minutes).'),
    # group schedules: settings
    _('Time zone the cron fields are read in (IANA name, e.g. Europe/Berlin).'),
    # group schedules: settings
    _('Longest message a schedule may send.'),
    # group schedules: settings
    _("Model names a schedule may ask for, one per line (empty: the agent's model, its provider's, or one of the provider's allowed models)."),
    # group schedules: settings
    _('Max per user'),
    # group schedules: settings
    _('Min interval minutes'),
    # group schedules: settings
    _('Timezone'),
    # group schedules: settings
    _('Max message'),
    # group schedules: settings
    _('Allowed models'),
    # tool schedule_add
    _("Schedule a recurring task. At each time the cron expression names, `message` is sent to the agent as the user (with this conversation's agent and tools), and the answer is posted into the conversation `inject_into` (an id of one of the user's conversations) or, when it is null, into a new conversation each time."),
    # tool schedule_add
    _('A unique name for the schedule (letters, digits, space _ . : -).'),
    # tool schedule_add
    _("When it fires: five fields: minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5' (09:00 on weekdays) or '*/15 * * * *'; or @hourly, @daily, @weekly, @monthly, @yearly."),
    # tool schedule_add
    _('What the agent is asked each time, self-contained.'),
    # tool schedule_add
    _("A model name for these turns; null: the agent's."),
    # tool schedule_add
    _('The conversation id the answers go to; null: a new conversation each time.'),
    # tool schedule_add
    _('Cron'),
    # tool schedule_add
    _('Model'),
    # tool schedule_add
    _('Inject into'),
    # tool schedule_list
    _("List the user's schedules: name, cron expression (and in words), message, target conversation, next and last run."),
    # tool schedule_remove
    _("Remove one of the user's schedules by name; it will not fire again."),
    # tool schedule_remove
    _("The schedule's name, as schedule_list shows it."),
    # group agent
    _('Agent'),
    # group agent
    _('System tools of schema-guided agents: reasoning, plan, clarification (pauses the turn), final answer (ends it) and report (a Markdown file per conversation). Offered to agent profiles of kind sgr / sgr_tool_calling, or when a profile lists them.'),
    # group agent: settings
    _('Largest report create_report may write (UTF-8 bytes of its content).'),
    # group agent: settings
    _('Reports one user may keep across their conversations; create_report is refused above it until old ones are deleted.'),
    # group agent: settings
    _('Bytes of reports one user may keep across their conversations.'),
    # group agent: settings
    _("Folder of the conversation's workspace that holds its reports."),
    # group agent: settings
    _('Max report'),
    # group agent: settings
    _('Max reports per user'),
    # group agent: settings
    _('Max report bytes per user'),
    # group agent: settings
    _('Reports folder'),
    # tool adapt_plan
    _("Adapt the research plan to what you found: the original and the updated goal, what changed (1-3 items) and the updated remaining steps (2-4). The user's checklist keeps the steps already done and lists the new ones."),
    # tool adapt_plan
    _('Why the plan needs to change, given the new data.'),
    # tool adapt_plan
    _('The research goal as it was.'),
    # tool adapt_plan
    _('The updated research goal (the same words if it did not change).'),
    # tool adapt_plan
    _('The specific changes to the plan, 1-3.'),
    # tool adapt_plan
    _('The updated remaining steps, 2-4, in order.'),
    # tool adapt_plan
    _('Numbers (1-based) of the steps of the current plan that are done.'),
    # tool adapt_plan
    _('Original goal'),
    # tool adapt_plan
    _('New goal'),
    # tool adapt_plan
    _('Plan changes'),
    # tool adapt_plan
    _('Next steps'),
    # tool adapt_plan
    _('Done steps'),
    # tool clarification
    _("Ask the user before you go on, when the request is ambiguous. The turn pauses until the user answers; the answer comes back as this call's result. Use it sparingly."),
    # tool clarification
    _('Why you need to ask (at most 200 characters).'),
    # tool clarification
    _('Unclear terms, 1-3.'),
    # tool clarification
    _('What you would assume without an answer, 2-3.'),
    # tool clarification
    _('Questions to the user, 1-3.'),
    # tool clarification
    _('Unclear terms'),
    # tool clarification
    _('Assumptions'),
    # tool clarification
    _('Questions'),
    # tool create_report
    _("Write a report as a Markdown file in this conversation's reports folder, with citations [1] [2] that refer to a numbered list of sources at its end. The user can download it from the card."),
    # tool create_report
    _('Why the report is ready.'),
    # tool create_report
    _("The report's title."),
    # tool create_report
    _("A phrase of the user's request, to write the report in its language."),
    # tool create_report
    _('The report in Markdown, citing sources as [1] [2] and listing them.'),
    # tool create_report
    _('How sure you are.'),
    # tool create_report
    _('Title'),
    # tool create_report
    _('User request language reference'),
    # tool create_report
    _('Confidence'),
    # tool final_answer
    _('Finish the task: the answer is shown to the user as your final message and the turn ends with the status you give ("completed", or "failed" when you could not do it).'),
    # tool final_answer
    _('Why the task is done.'),
    # tool final_answer
    _('What you did, 1-5 steps.'),
    # tool final_answer
    _('The answer for the user (Markdown).'),
    # tool final_answer
    _('completed or failed.'),
    # tool final_answer
    _('Completed steps'),
    # tool final_answer
    _('Answer'),
    # tool final_answer
    _('Status'),
    # tool generate_plan
    _('Make a research plan: the goal, 3-4 ordered steps and 2-3 search strategies. It is shown to the user as a checklist that follows your progress (update it with adapt_plan).'),
    # tool generate_plan
    _('Why this approach to the research.'),
    # tool generate_plan
    _('The main research goal.'),
    # tool generate_plan
    _('The planned steps, 3-4, in order.'),
    # tool generate_plan
    _('How you will look for the information, 2-3 strategies.'),
    # tool generate_plan
    _('Research goal'),
    # tool generate_plan
    _('Planned steps'),
    # tool generate_plan
    _('Search strategies'),
    # tool reasoning
    _('Think before you act: where the task stands and what to do next. In an sgr agent you call this first in every round; it changes nothing in the world.'),
    # tool reasoning
    _('Your reasoning, 2-3 short steps.'),
    # tool reasoning
    _('Where the task stands now (at most 300 characters).'),
    # tool reasoning
    _('How the plan is going (at most 150 characters).'),
    # tool reasoning
    _('Whether you have enough data to answer.'),
    # tool reasoning
    _('What is left to do next, 1-3 steps.'),
    # tool reasoning
    _('Whether the task is done.'),
    # tool reasoning
    _('Reasoning steps'),
    # tool reasoning
    _('Current situation'),
    # tool reasoning
    _('Plan status'),
    # tool reasoning
    _('Enough data'),
    # tool reasoning
    _('Remaining steps'),
    # tool reasoning
    _('Task completed'),
    # group subagents
    _('Subagents'),
    # group subagents
    _('subagent_spawn: a helper runs a task as its own turn in a child conversation and posts its answer back when it is done.'),
    # group subagents: settings
    _('How deep subagents may nest (1: a subagent cannot spawn another).'),
    # group subagents: settings
    _('Subagents one user may have running at once.'),
    # group subagents: settings
    _("Model rounds a subagent's turn may take before it stops."),
    # group subagents: settings
    _('Longest task a subagent may be given.'),
    # group subagents: settings
    _("Longest answer posted back into the parent conversation (the rest stays in the subagent's conversation)."),
    # group subagents: settings
    _("Model names a subagent may ask for, one per line (empty: the agent's model, its provider's, or one of the provider's allowed models)."),
    # group subagents: settings
    _('Max depth'),
    # group subagents: settings
    _('Max concurrent per user'),
    # group subagents: settings
    _('Max rounds'),
    # group subagents: settings
    _('Max result'),
    # tool subagent_spawn
    _('Hand a task to a helper agent. It runs on its own, in a new conversation, with this conversation\'s agent and tools; this call returns at once ("started"). When the helper finishes, its answer is posted where `inject_into` says: "parent" (this conversation, where you will see it), another conversation\'s id, or null (only logged, nobody is notified). A helper with nothing to report answers {"silent": true, "reason": "..."} and nothing is posted. Give it a self-contained task: it does not see this conversation.'),
    # tool subagent_spawn
    _('A short name for the helper, e.g. what it works on.'),
    # tool subagent_spawn
    _('The task, self-contained: everything the helper needs to know.'),
    # tool subagent_spawn
    _("A model name for the helper; null: the agent's."),
    # tool subagent_spawn
    _('Where the answer is posted: "parent" (this conversation), a conversation id, or null (only logged: kept in the helper\'s conversation, nobody is notified).'),
    # group tool_search
    _('Tool search'),
    # group tool_search
    _('Find the tools you may use by what they do, and load their schemas when there are too many to send with every request.'),
    # group tool_search: settings
    _('Most tools one search names (best matches first).'),
    # group tool_search: settings
    _('When the model names none to load, the schemas of this many best matches are loaded for the next round.'),
    # group tool_search: settings
    _('Also rank the tools by meaning with the local embedding model (all-MiniLM-L6-v2 in the worker, as memory search uses): "clock" finds current_time. Off: by the words of their names and descriptions only.'),
    # group tool_search: settings
    _('How close in meaning (cosine similarity) a tool must be to the query to count as found.'),
    # group tool_search: settings
    _('Load top'),
    # group tool_search: settings
    _('Match by meaning'),
    # group tool_search: settings
    _('Meaning floor'),
    # tool tool_search
    _('Find more tools you may use by what they do: returns their names and one-line descriptions, and loads their schemas so you can call them in your next step.'),
    # tool tool_search
    _('What the tool should do, in a few words.'),
    # tool tool_search
    _('Names to load; empty: the best matches.'),
    # tool tool_search
    _('Load'),
    # group time
    _('Time'),
    # group time
    _('Current date and time in any IANA timezone.'),
    # group time: settings
    _('Timezone used when none is given.'),
    # group time: settings
    _('Default timezone'),
    # tool current_time
    _('Return the current date and time in an IANA timezone (e.g. Europe/Berlin, UTC).'),
    # tool current_time
    _('IANA timezone name such as UTC or America/New_York; leave it out for the default timezone an administrator set (UTC unless changed).'),
    # units
    _('s'),
    # units
    _('ms'),
    # units
    _('bytes'),
    # units
    _('KB'),
    # units
    _('MB'),
    # units
    _('GB'),
    # units
    _('characters'),
]
