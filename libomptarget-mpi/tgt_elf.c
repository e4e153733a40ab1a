/* Reading the ELF objects loaded in this process: which source file
 * defined a symbol (for messages about offload entries), whether the main
 * program imports a symbol, and whether a symbol resolves to this library.
 * Start-up checks use them; they touch no runtime state. */
#define _GNU_SOURCE
#include "tgt_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    uintptr_t addr;
    uintptr_t bias;          /* load bias of the object holding addr */
    char path[512];
    bool found;
} obj_query_t;

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    obj_query_t *q = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || q->addr < lo || q->addr >= lo + ph->p_memsz)
            continue;
        q->bias = info->dlpi_addr;
        snprintf(q->path, sizeof(q->path), "%s",
                 info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name
                                                       : "/proc/self/exe");
        q->found = true;
        return 1;
    }
    return 0;
}

/* The source file that defined the local symbol at addr (an entry's name
 * string: each translation unit has its own), from the STT_FILE symbol
 * that precedes it in the ELF symbol table; false when the file has no
 * symbol table (stripped) or does not say. */
bool tgt_elf_symbol_file(const void *addr, char *buf, size_t cap)
{
    obj_query_t q = {.addr = (uintptr_t)addr};
    dl_iterate_phdr(find_object, &q);
    if (!q.found)
        return false;
    int fd = open(q.path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(ElfW(Ehdr)))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return false;
    size_t len = (size_t)st.st_size;
    const unsigned char *img = map;
    const ElfW(Ehdr) *eh = map;
    bool found = false;
    uintptr_t want = q.addr - q.bias;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > len ||
        (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > len - eh->e_shoff)
        goto out;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(img + eh->e_shoff);
    for (int s = 0; s < eh->e_shnum && !found; s++) {
        if (sh[s].sh_type != SHT_SYMTAB || sh[s].sh_link >= eh->e_shnum)
            continue;
        const ElfW(Shdr) *strs = &sh[sh[s].sh_link];
        if (sh[s].sh_offset > len || sh[s].sh_size > len - sh[s].sh_offset ||
            strs->sh_offset > len || strs->sh_size > len - strs->sh_offset)
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)(img + sh[s].sh_offset);
        size_t nsym = sh[s].sh_size / sizeof(ElfW(Sym));
        const char *names = (const char *)img + strs->sh_offset;
        const char *file = NULL;
        for (size_t i = 0; i < nsym; i++) {
            if (sym[i].st_name >= strs->sh_size)
                continue;
            int type = ELF64_ST_TYPE(sym[i].st_info);
            const char *name = names + sym[i].st_name;
            if (type == STT_FILE) {
                file = memchr(name, '\0', strs->sh_size - sym[i].st_name) ? name : NULL;
            } else if (ELF64_ST_BIND(sym[i].st_info) == STB_LOCAL && type == STT_OBJECT &&
                       sym[i].st_value == want) {
                if (file && *file) {
                    snprintf(buf, cap, "%s", file);
                    found = true;
                }
                break;
            }
        }
    }
out:
    munmap(map, len);
    return found;
}

/* Whether the main program imports `name` from a shared library: its
 * undefined dynamic symbols are those below the GNU hash table's first
 * hashed symbol (or, with a SysV table, among all of them). */
struct exe_import_query {
    const char *name;
    bool found;
};

static int exe_import_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct exe_import_query *q = arg;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 1;
    uintptr_t symtab = 0, strtab = 0, gnu_hash = 0, sysv_hash = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        /* glibc relocates these in place for most objects, not for all. */
        uintptr_t v = dyn->d_un.d_ptr;
        if (v && v < info->dlpi_addr)
            v += info->dlpi_addr;
        if (dyn->d_tag == DT_SYMTAB)
            symtab = v;
        else if (dyn->d_tag == DT_STRTAB)
            strtab = v;
        else if (dyn->d_tag == DT_GNU_HASH)
            gnu_hash = v;
        else if (dyn->d_tag == DT_HASH)
            sysv_hash = v;
    }
    uint32_t nsyms = 0;
    if (gnu_hash)
        nsyms = ((const uint32_t *)gnu_hash)[1]; /* symoffset */
    else if (sysv_hash)
        nsyms = ((const uint32_t *)sysv_hash)[1]; /* nchain */
    if (!symtab || !strtab)
        return 1;
    const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab;
    for (uint32_t i = 1; i < nsyms; i++)
        if (sym[i].st_shndx == SHN_UNDEF &&
            strcmp((const char *)strtab + sym[i].st_name, q->name) == 0) {
            q->found = true;
            break;
        }
    return 1; /* the main program comes first; stop there */
}

bool tgt_exe_imports(const char *name)
{
    struct exe_import_query q = {name, false};
    dl_iterate_phdr(exe_import_cb, &q);
    return q.found;
}

bool tgt_symbol_is_ours(const char *name)
{
    Dl_info found, self;
    void *f = dlsym(RTLD_DEFAULT, name);
    return f && dladdr(f, &found) && dladdr((void *)tgt_exe_imports, &self) &&
           found.dli_fbase == self.dli_fbase;
}
