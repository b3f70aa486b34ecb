;;; eglot.el --- Emacs in batch mode (Debian's emacs and elpa-eglot) runs the README's Emacs snippet  -*- lexical-binding: t -*-
;; $PDLINT_SNIPPET is loaded with `pdlint' on PATH; Emacs opens an inventory file, hovers its TP value, edits
;; another file of the inventory without saving, and writes what it shows to $PDLINT_OUT as JSON
;; (tests/test_lsp_emacs.py). Batch mode runs no command loop, so this file runs what the loop would:
;; `post-command-hook' (where `eglot-ensure' connects) and eglot's didChange after an edit.
(require 'package)
(package-initialize)  ; Debian's elpa-* packages
(require 'json)
(load (getenv "PDLINT_SNIPPET") nil t)
(require 'eglot)

(defvar pdlint-result nil)

(defun pdlint-put (key value)
  (setq pdlint-result (cons (cons key value) pdlint-result)))

(defun pdlint-shown ()
  "The current buffer's diagnostics: (line, column, text)."
  (mapcar (lambda (d)
            (let ((beg (flymake-diagnostic-beg d)))
              (list (cons "line" (1- (line-number-at-pos beg)))
                    (cons "column" (save-excursion (goto-char beg) (current-column)))
                    (cons "text" (flymake-diagnostic-text d)))))
          eglot--diagnostics))

(defun pdlint-has (code)
  (cl-some (lambda (d) (string-match-p (regexp-quote (format "[%s]" code)) (flymake-diagnostic-text d)))
           eglot--diagnostics))

(defun pdlint-wait (test)
  "Let the server's messages in until TEST is true (at most 60 s); whether it became true."
  (let ((deadline (+ (float-time) 60)))
    (while (and (not (funcall test)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (and (funcall test) t)))

(defun pdlint-open (path)
  (find-file path)
  (run-hooks 'post-command-hook)
  (current-buffer))

(let* ((decode (pdlint-open (getenv "PDLINT_DECODE"))))
  (pdlint-put "mode" (symbol-name major-mode))
  (pdlint-put "opened" (pdlint-wait (lambda () (with-current-buffer decode (pdlint-has "tp-ratio[moriio]")))))
  (pdlint-put "decode_before" (with-current-buffer decode (pdlint-shown)))
  (with-current-buffer decode
    (goto-char (point-min))
    (re-search-forward "^vllm_tensor_parallel_size: ")
    (let ((hover (jsonrpc-request (eglot--current-server-or-lose) :textDocument/hover
                                  (eglot--TextDocumentPositionParams))))
      (pdlint-put "hover" (plist-get (plist-get hover :contents) :value))))
  (let ((prefill (pdlint-open (getenv "PDLINT_PREFILL"))))
    (pdlint-put "servers" (length (hash-table-values eglot--servers-by-project)))
    (with-current-buffer prefill
      (goto-char (point-min))
      (re-search-forward "^vllm_tensor_parallel_size: 4")
      (replace-match "vllm_tensor_parallel_size: 2")
      (eglot--signal-textDocument/didChange)  ; what eglot's idle timer sends after a keystroke
      (pdlint-put "modified" (and (buffer-modified-p) t)))
    (pdlint-put "edited" (pdlint-wait (lambda () (with-current-buffer decode (not (pdlint-has "tp-ratio[moriio]"))))))
    (pdlint-put "decode_after" (with-current-buffer decode (pdlint-shown)))))

(with-temp-file (getenv "PDLINT_OUT")
  (insert (json-encode pdlint-result)))
(let ((eglot-autoshutdown t))
  (ignore-errors (eglot-shutdown (with-current-buffer (get-file-buffer (getenv "PDLINT_DECODE"))
                                   (eglot--current-server-or-lose)))))
(kill-emacs 0)
